// SPDX-License-Identifier: Apache-2.0
// The gnuplot writer (gnuplot.hh): the script text, and gnuplot run on it.
#include "tools/common/gnuplot.hh"

#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

extern char** environ;

namespace loom::tools {
namespace {

// A gnuplot single-quoted string ('' stands for one quote).
std::string quoted(const std::string& s) {
    std::string out = "'";
    for (char ch : s) {
        out += ch == '\'' ? std::string("''") : std::string(1, ch);
    }
    return out + "'";
}

// The last line of `path` with something besides blanks and carets (gnuplot's error
// message comes last, under a caret pointing into the script).
std::string last_message(const std::string& path) {
    std::ifstream in(path);
    std::string line, last;
    while (std::getline(in, line)) {
        if (line.find_first_not_of(" \t^") != std::string::npos) {
            last = line;
        }
    }
    return last;
}

}  // namespace

std::string gnuplot_script(const plot_spec& plot, const std::string& png) {
    std::ostringstream gp;
    gp.precision(17);
    // pngcairo draws smoother lines; plain png is what every gnuplot has.
    gp << "if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {\n"
       << "  set terminal pngcairo size 960,640 noenhanced\n"
       << "} else {\n"
       << "  set terminal png size 960,640 noenhanced\n"
       << "}\n"
       << "set output " << quoted(png) << '\n'
       << "set title " << quoted(plot.title) << '\n'
       << "set xlabel " << quoted(plot.xlabel) << '\n'
       << "set ylabel " << quoted(plot.ylabel) << '\n'
       << "set logscale xy\n"
       << "set key outside right top title 'legend' box\n"
       << "set grid\n";
    std::vector<std::string> lines;
    for (const plot_series& s : plot.series) {
        std::ostringstream data;
        data.precision(17);
        int points = 0;
        for (const auto& [x, y] : s.points) {
            if (x > 0 && y > 0) {  // a log scale has no place for the rest
                data << x << ' ' << y << '\n';
                ++points;
            }
        }
        if (points == 0) {
            continue;
        }
        std::string block = "$d" + std::to_string(lines.size());
        gp << block << " << EOD\n" << data.str() << "EOD\n";
        lines.push_back(block + " using 1:2 with linespoints title " + quoted(s.title));
    }
    if (lines.empty()) {
        return "";
    }
    gp << "plot ";
    for (size_t k = 0; k < lines.size(); ++k) {
        gp << (k ? ", \\\n     " : "") << lines[k];
    }
    gp << '\n';
    return gp.str();
}

gnuplot_outcome run_gnuplot(const std::string& script_path, const std::string& png) {
    gnuplot_outcome out;
    std::string log = script_path + ".log";
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
    char prog[]        = "gnuplot";
    std::string script = script_path;
    char* argv[]       = {prog, script.data(), nullptr};
    pid_t pid          = 0;
    int err            = posix_spawnp(&pid, prog, &actions, nullptr, argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    if (err != 0) {
        std::remove(log.c_str());
        out.result  = gnuplot_outcome::kind::missing;
        out.message = "cannot run gnuplot (" + std::string(std::strerror(err)) +
                      "); install it (Debian/Ubuntu: gnuplot-nox)";
        return out;
    }
    int wstatus = 0;
    while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
    }
    std::string said = last_message(log);
    std::remove(log.c_str());
    if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 127) {  // the child could not exec
        out.result  = gnuplot_outcome::kind::missing;
        out.message = "gnuplot not found on PATH; install it (Debian/Ubuntu: gnuplot-nox)";
        return out;
    }
    if (!WIFEXITED(wstatus) || WEXITSTATUS(wstatus) != 0) {
        out.result  = gnuplot_outcome::kind::failed;
        out.message = "gnuplot " + script_path + " failed" + (said.empty() ? "" : ": " + said);
        return out;
    }
    struct stat st {};
    if (::stat(png.c_str(), &st) != 0 || st.st_size == 0) {
        out.result  = gnuplot_outcome::kind::failed;
        out.message = "gnuplot wrote no image to " + png;
    }
    return out;
}

}  // namespace loom::tools
