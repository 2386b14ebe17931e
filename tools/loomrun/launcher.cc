// SPDX-License-Identifier: Apache-2.0
// The job: fork/exec N ranks, then one poll() loop over a signalfd and the ranks' stdout and
// stderr pipes until every rank is reaped and its output drained.
//
// Ending a job: the first rank that exits non-zero or dies of a signal decides loomrun's exit
// status (128+signal for a signal) and the reason line; the others get SIGTERM to their
// process group, then SIGKILL after the grace period. --timeout does the same with 124, and
// SIGINT/SIGTERM/SIGHUP to loomrun with 128+signal. Each rank runs in its own process group
// so a rank that is a script takes its children with it.
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <ctime>

#include "base/check.hh"
#include "base/clock.hh"
#include "base/log.hh"
#include "base/secret.hh"
#include "bootstrap/bootstrap.hh"
#include "dpus.hh"
#include "loomrun.hh"
#include "switches.hh"
#include "topology/fabric.hh"
#include "topology/topology.hh"

extern char** environ;

namespace loom::loomrun {
namespace {

// After the last rank exits, a background child it left may still hold the pipes open; its
// output gets this long to arrive, so loomrun never waits on a process it did not start.
constexpr double drain_s = 1.0;
// --dpu: how long ranks may take to fail by themselves after a DPU died (their reliable
// protocol's silence timeout is shorter).
constexpr double dpu_grace_s = 30.0;
// Rank 0 listens here inside its namespace (--hosts netns): a fresh namespace has every port.
constexpr int netns_bootstrap_port = 29500;

// The variables loomrun always sets for every rank (an inherited value is replaced: they
// number the ranks and name loomrun's rendezvous). The user's LOOM_TRANSPORT, LOOM_JOB,
// LOOM_BOOTSTRAP, LOOM_TCP_ADDR and LOOM_OFI_ADDR are kept or refused (rank_settings.cc),
// never replaced.
constexpr const char* rank_vars[] = {"LOOM_RANK",      "LOOM_SIZE",      "LOOM_JOB",
                                     "LOOM_BOOTSTRAP", "LOOM_TRANSPORT", "LOOM_JOB_SECRET"};
// The variables of loomrun's environment the user may set in place of loomrun's defaults.
constexpr const char* user_vars[] = {
    "LOOM_RANK",           "LOOM_SIZE",     "LOOM_TRANSPORT",     "LOOM_BOOTSTRAP", "LOOM_JOB",
    "LOOM_JOB_SECRET",     "LOOM_TCP_ADDR", "LOOM_OFI_ADDR",      "LOOM_FABRIC",    "LOOM_PROGRESS",
    "LOOM_LINK_STATS_DIR", "LOOM_SWITCH",   "LOOM_SWITCH_FABRIC", "LOOM_INC_TICKET"};
// A lattice fabric is forwarded hop by hop (fwd:<transport>); a star or a fabric file
// given with --switch only places the aggregation nodes.
bool forwarded(const std::string& fabric) {
    if (topology::names_fabric_file(fabric)) {
        return false;
    }
    auto shape = topology::shape::parse(fabric);
    return shape && shape->is_lattice();
}

// Set by loomrun only under --fabric (rank_settings.cc refuses a user value unlike its own).
constexpr const char* fabric_vars[] = {"LOOM_FABRIC", "LOOM_PROGRESS"};
// Under --switch.
constexpr const char* switch_vars[] = {"LOOM_SWITCH", "LOOM_SWITCH_FABRIC", "LOOM_INC_TICKET"};

bool sets(std::string_view entry, const char* v) {
    return entry.starts_with(v) && entry.size() > strlen(v) && entry[strlen(v)] == '=';
}

std::string signal_name(int sig) {
    const char* abbrev = sigabbrev_np(sig);
    return abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}

std::string seconds_text(double s) {
    char text[32];
    std::snprintf(text, sizeof text, "%.1f s", s);
    return text;
}

// A port on 127.0.0.1 that is free now; rank 0 binds it moments later (the kernel does not
// hand the same ephemeral port out again that quickly).
result<int> free_loopback_port() {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family      = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len     = sizeof a;
    if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
        getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
        int err = errno;
        if (fd >= 0) {
            close(fd);
        }
        return system_error(std::string("cannot find a free port on 127.0.0.1: ") + strerror(err));
    }
    close(fd);
    return static_cast<int>(ntohs(a.sin_port));
}

struct rank_proc {
    pid_t pid    = -1;
    bool running = false;
    int fds[2]   = {-1, -1};  // read ends of its stdout and stderr pipes
    std::unique_ptr<line_prefixer> sinks[2];
};

class job {
  public:
    job(const options& o, const rank_settings& chosen, netns_hosts* net, int signal_fd,
        const sigset_t& old_mask)
        : o_(o),
          chosen_(chosen),
          net_(net),
          sfd_(signal_fd),
          old_mask_(old_mask),
          ranks_(static_cast<size_t>(o.ranks)) {}
    ~job();

    status start(const std::string& bootstrap);
    int wait_all();  // the event loop; returns the exit status
    const std::string& id() const { return job_id_; }
    /// Ends the ranks already started (start() failed part-way), with this reason.
    void abandon(const std::string& reason) { fail_first(exit_failed, reason); }

  private:
    std::vector<std::string> environment(int rank, const std::string& bootstrap) const;
    [[noreturn]] void exec_rank(int rank, int out_fd, int err_fd, std::vector<std::string> env,
                                pid_t launcher);
    int poll_timeout_ms(double now) const;
    void on_signals();
    void reap();
    void on_dpu_exit(pid_t pid, int wstatus);
    void read_output(rank_proc& r, int stream);
    void fail_first(int code, const std::string& reason);
    void end_ranks();
    std::string running_list() const;
    int running_count() const;
    void signal_running(int sig) const;

    const options& o_;
    const rank_settings& chosen_;
    netns_hosts* net_;
    int sfd_;
    sigset_t old_mask_;
    std::string job_id_;
    std::string secret_;  // LOOM_JOB_SECRET: fresh per launch, authenticates the rendezvous
    std::vector<rank_proc> ranks_;
    double timeout_at_s_  = 0;  // 0: none
    double kill_at_s_     = 0;  // when ending: SIGKILL time; 0 once sent
    bool ending_          = false;
    double drain_until_s_ = 0;
    int exit_code_        = exit_ok;
    std::string reason_;
};

job::~job() {
    for (auto& r : ranks_) {
        for (int& fd : r.fds) {
            if (fd >= 0) {
                close(fd);
            }
        }
    }
}

std::vector<std::string> job::environment(int rank, const std::string& bootstrap) const {
    std::vector<std::string> env;
    for (char** e = environ; *e != nullptr; ++e) {
        std::string_view entry(*e);
        bool ours = false;
        for (const char* v : rank_vars) {
            ours = ours || sets(entry, v);
        }
        for (const char* v : fabric_vars) {
            ours = ours || (!o_.fabric.empty() && sets(entry, v));
        }
        for (const char* v : switch_vars) {
            ours = ours || ((o_.with_switch || o_.dpu_inc) && sets(entry, v));
        }
        ours =
            ours || (o_.dpu && (sets(entry, "LOOM_DPU_SOCKET") || sets(entry, "LOOM_DPU_SECRET") ||
                                sets(entry, "LOOM_TRANSPORT")));
        ours = ours || (o_.link_stats && sets(entry, "LOOM_LINK_STATS_DIR")) ||
               (net_ != nullptr && (sets(entry, "LOOM_TCP_ADDR") || sets(entry, "LOOM_OFI_ADDR")));
        if (!ours) {
            env.emplace_back(entry);
        }
    }
    env.push_back("LOOM_RANK=" + std::to_string(rank));
    env.push_back("LOOM_SIZE=" + std::to_string(o_.ranks));
    env.push_back("LOOM_JOB=" + job_id_);
    env.push_back("LOOM_BOOTSTRAP=" + bootstrap);
    env.push_back("LOOM_JOB_SECRET=" + secret_);
    if (o_.dpu) {
        // Each rank talks only to its own DPU (tools/loom-dpu), which routes for it.
        env.push_back("LOOM_TRANSPORT=dpu");
        env.push_back("LOOM_DPU_SOCKET=" + o_.dpu_dir + "/h" + std::to_string(rank) + ".sock");
        env.push_back("LOOM_DPU_SECRET=" + o_.dpu_secret);
    } else if (chosen_.transport.empty()) {
        // The ranks choose (rank_settings.cc): nothing to set.
    } else if (o_.fabric.empty() || !forwarded(o_.fabric)) {
        env.push_back("LOOM_TRANSPORT=" + chosen_.transport);
    } else {
        env.push_back("LOOM_TRANSPORT=fwd:" + chosen_.transport);
        env.push_back("LOOM_FABRIC=" + o_.fabric);
        env.push_back("LOOM_PROGRESS=thread");
    }
    if (!o_.link_stats_dir.empty()) {
        env.push_back("LOOM_LINK_STATS_DIR=" + o_.link_stats_dir);
    }
    env.insert(env.end(), o_.switch_env.begin(), o_.switch_env.end());
    if (net_ != nullptr) {
        // Each rank binds its own namespace's address, whichever network driver it opens.
        env.push_back("LOOM_TCP_ADDR=" + net_->address(rank));
        env.push_back("LOOM_OFI_ADDR=" + net_->address(rank));
    }
    return env;
}

void job::exec_rank(int rank, int out_fd, int err_fd, std::vector<std::string> env,
                    pid_t launcher) {
    setpgid(0, 0);
    // A rank must not outlive a loomrun that was SIGKILLed (nobody would end it); the check
    // after prctl covers a loomrun that died before it.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != launcher) {
        _exit(128 + SIGKILL);
    }
    // Only rank 0 reads loomrun's stdin, as mpirun does; N readers of one tty is chaos.
    if (rank != 0) {
        int null = open("/dev/null", O_RDONLY);
        dup2(null, STDIN_FILENO);
    }
    dup2(out_fd, STDOUT_FILENO);
    dup2(err_fd, STDERR_FILENO);
    if (net_ != nullptr) {
        if (loom::status st = net_->enter(rank); !st) {
            dprintf(STDERR_FILENO, "loomrun: rank %d: %s\n", rank, st.message().c_str());
            _exit(126);
        }
    }
    signal(SIGPIPE, SIG_DFL);  // loomrun ignores it; an ignored disposition survives exec
    sigprocmask(SIG_SETMASK, &old_mask_, nullptr);
    std::vector<char*> argv, envp;
    for (const auto& a : o_.command) {
        argv.push_back(const_cast<char*>(a.c_str()));
    }
    argv.push_back(nullptr);
    for (auto& e : env) {
        envp.push_back(e.data());
    }
    envp.push_back(nullptr);
    execvpe(argv[0], argv.data(), envp.data());
    dprintf(STDERR_FILENO, "loomrun: rank %d cannot execute '%s': %s\n", rank, argv[0],
            strerror(errno));
    _exit(127);  // as a shell does for a command it cannot run
}

status job::start(const std::string& bootstrap) {
    job_id_ = !chosen_.job.empty()
                  ? chosen_.job
                  : "lr" + std::to_string(getpid()) + "-" +
                        std::to_string(static_cast<unsigned long>(std::time(nullptr)) % 1000000);
    if (!chosen_.secret.empty()) {
        secret_ = chosen_.secret;
    } else {
        LOOM_ASSIGN(secret_, random_secret_hex());
    }
    for (int k = 0; k < o_.ranks; ++k) {
        rank_proc& r = ranks_[static_cast<size_t>(k)];
        int out[2], err[2];
        if (pipe2(out, O_CLOEXEC) != 0) {
            return system_error(std::string("pipe: ") + strerror(errno));
        }
        if (pipe2(err, O_CLOEXEC) != 0) {
            close(out[0]);
            close(out[1]);
            return system_error(std::string("pipe: ") + strerror(errno));
        }
        auto env   = environment(k, bootstrap);
        pid_t self = getpid();
        pid_t pid  = fork();
        if (pid == 0) {
            exec_rank(k, out[1], err[1], std::move(env), self);
        }
        close(out[1]);
        close(err[1]);
        r.fds[0] = out[0];
        r.fds[1] = err[0];
        if (pid < 0) {
            return system_error("fork of rank " + std::to_string(k) + ": " + strerror(errno));
        }
        setpgid(pid, pid);  // also here: a kill right after fork must reach the group
        r.pid      = pid;
        r.running  = true;
        r.sinks[0] = std::make_unique<line_prefixer>(k, STDOUT_FILENO, o_.tag_output);
        r.sinks[1] = std::make_unique<line_prefixer>(k, STDERR_FILENO, o_.tag_output);
        for (int fd : r.fds) {
            fcntl(fd, F_SETFL, O_NONBLOCK);
        }
    }
    if (o_.timeout_s > 0) {
        timeout_at_s_ = now_s() + o_.timeout_s;
    }
    return status::ok();
}

int job::running_count() const {
    return static_cast<int>(
        std::count_if(ranks_.begin(), ranks_.end(), [](const rank_proc& r) { return r.running; }));
}

void job::signal_running(int sig) const {
    for (const auto& r : ranks_) {
        if (r.running) {
            kill(-r.pid, sig);  // the rank's whole process group
        }
    }
}

std::string job::running_list() const {
    std::string out;
    for (size_t k = 0; k < ranks_.size(); ++k) {
        if (ranks_[k].running) {
            out += (out.empty() ? "" : ",") + std::to_string(k);
        }
    }
    return out.empty() ? "none" : out;
}

void job::fail_first(int code, const std::string& reason) {
    if (reason_.empty()) {
        exit_code_ = code;
        reason_    = reason;
    }
    end_ranks();
}

void job::end_ranks() {
    if (ending_) {
        return;
    }
    ending_    = true;
    kill_at_s_ = now_s() + o_.grace_s;
    signal_running(SIGTERM);
}

// --dpu: a DPU that ends before the job does fails the job, named. The ranks are given
// dpu_grace_s to see their peers fail (the reliable protocol's silence timeout) and return
// their errors themselves; then loomrun ends those still running.
void job::on_dpu_exit(pid_t pid, int wstatus) {
    for (auto& [dpu_pid, node] : o_.dpu_pids) {
        if (dpu_pid != pid || ending_) {
            continue;
        }
        std::string how = WIFSIGNALED(wstatus)
                              ? "was killed by " + signal_name(WTERMSIG(wstatus))
                              : "exited with status " + std::to_string(WEXITSTATUS(wstatus));
        if (reason_.empty()) {
            exit_code_ = exit_failed;
            reason_    = "loomrun: the DPU of node " + std::to_string(node) + " (loom-dpu pid " +
                      std::to_string(pid) + ") " + how + " during the job";
        }
        double end_at = now_s() + dpu_grace_s;
        timeout_at_s_ = timeout_at_s_ > 0 ? std::min(timeout_at_s_, end_at) : end_at;
    }
}

void job::reap() {
    int wstatus = 0;
    pid_t pid;
    while ((pid = waitpid(-1, &wstatus, WNOHANG)) > 0) {
        on_dpu_exit(pid, wstatus);
        for (size_t k = 0; k < ranks_.size(); ++k) {
            rank_proc& r = ranks_[k];
            if (r.pid != pid || !r.running) {
                continue;
            }
            r.running       = false;
            int others      = running_count();
            std::string who = "loomrun: rank " + std::to_string(k);
            std::string rest =
                "; ending the other " + std::to_string(others) + (others == 1 ? " rank" : " ranks");
            if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) != 0 && !ending_) {
                fail_first(WEXITSTATUS(wstatus), who + " exited with status " +
                                                     std::to_string(WEXITSTATUS(wstatus)) +
                                                     (others ? rest : ""));
            } else if (WIFSIGNALED(wstatus) && !ending_) {
                fail_first(128 + WTERMSIG(wstatus), who + " was killed by " +
                                                        signal_name(WTERMSIG(wstatus)) +
                                                        (others ? rest : ""));
            }
        }
    }
    if (running_count() == 0 && drain_until_s_ == 0) {
        drain_until_s_ = now_s() + drain_s;
    }
}

void job::on_signals() {
    signalfd_siginfo info;
    while (read(sfd_, &info, sizeof info) == sizeof info) {
        int sig = static_cast<int>(info.ssi_signo);
        if (sig == SIGCHLD) {
            reap();
        } else {
            int n = running_count();
            fail_first(128 + sig, "loomrun: interrupted by " + signal_name(sig) + "; ending " +
                                      std::to_string(n) +
                                      (n == 1 ? " running rank" : " running ranks"));
        }
    }
}

void job::read_output(rank_proc& r, int stream) {
    char buf[16384];
    for (;;) {
        ssize_t n = read(r.fds[stream], buf, sizeof buf);
        if (n > 0) {
            r.sinks[stream]->feed(buf, static_cast<size_t>(n));
            continue;
        }
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
            r.sinks[stream]->finish();
            close(r.fds[stream]);
            r.fds[stream] = -1;
        }
        return;
    }
}

int job::poll_timeout_ms(double now) const {
    double next   = -1;
    auto consider = [&](double at) {
        if (at > 0) {
            next = next < 0 ? at : std::min(next, at);
        }
    };
    consider(ending_ ? 0 : timeout_at_s_);
    consider(ending_ ? kill_at_s_ : 0);
    consider(drain_until_s_);
    return next < 0 ? -1 : static_cast<int>(std::ceil(std::max(0.0, next - now) * 1e3));
}

int job::wait_all() {
    for (;;) {
        std::vector<pollfd> fds{{sfd_, POLLIN, 0}};
        std::vector<std::pair<rank_proc*, int>> owners;
        for (auto& r : ranks_) {
            for (int s = 0; s < 2; ++s) {
                if (r.fds[s] >= 0) {
                    fds.push_back({r.fds[s], POLLIN, 0});
                    owners.emplace_back(&r, s);
                }
            }
        }
        double now = now_s();
        if (running_count() == 0 && (owners.empty() || now >= drain_until_s_)) {
            break;
        }
        if (poll(fds.data(), fds.size(), poll_timeout_ms(now)) < 0 && errno != EINTR) {
            fail_first(exit_failed, std::string("loomrun: poll: ") + strerror(errno));
        }
        for (size_t i = 1; i < fds.size(); ++i) {
            if (fds[i].revents != 0) {
                read_output(*owners[i - 1].first, owners[i - 1].second);
            }
        }
        if (fds[0].revents & POLLIN) {
            on_signals();
        }
        now = now_s();
        if (!ending_ && timeout_at_s_ > 0 && now >= timeout_at_s_) {
            fail_first(exit_timeout, "loomrun: timed out after " + seconds_text(o_.timeout_s) +
                                         "; ranks still running: " + running_list());
        }
        if (ending_ && kill_at_s_ > 0 && now >= kill_at_s_) {
            signal_running(SIGKILL);
            kill_at_s_ = 0;
        }
    }
    for (auto& r : ranks_) {  // output a lingering background child still held
        for (int s = 0; s < 2; ++s) {
            if (r.fds[s] >= 0) {
                r.sinks[s]->finish();
            }
        }
    }
    if (!reason_.empty()) {
        std::fprintf(stderr, "%s\n", reason_.c_str());
    }
    return exit_code_;
}

// The user's LOOM_* settings that loomrun would otherwise choose (rank_settings.cc).
user_settings read_user_settings() {
    user_settings user;
    for (char** e = environ; *e != nullptr; ++e) {
        std::string_view entry(*e);
        for (const char* v : user_vars) {
            if (sets(entry, v)) {
                user[v] = std::string(entry.substr(strlen(v) + 1));
            }
        }
    }
    return user;
}

}  // namespace

int run_job(const options& given) {
    options opts       = given;
    user_settings user = read_user_settings();
    auto chosen        = resolve_rank_settings(opts, user);
    if (!chosen) {
        std::fprintf(stderr, "loomrun: %s\n", chosen.error().message().c_str());
        return exit_bad_args;
    }
    opts.transport = chosen->transport;
    if (user.count("LOOM_RANK") || user.count("LOOM_SIZE")) {
        LOOM_LOG_INFO(log::subsystem::init,
                      "loomrun: LOOM_RANK and LOOM_SIZE of its environment are replaced: loomrun "
                      "numbers the %d ranks it starts",
                      opts.ranks);
    }
    std::unique_ptr<link_stats_dir> stats;  // --link-stats: printed and removed at exit
    if (opts.link_stats) {
        auto dir = link_stats_dir::create();
        if (!dir) {
            std::fprintf(stderr, "loomrun: %s\n", dir.error().message().c_str());
            return exit_failed;
        }
        stats               = std::move(*dir);
        opts.link_stats_dir = stats->path();
    }
    // Signals arrive through a signalfd, in the same poll() as the ranks' output.
    sigset_t mask, old_mask;
    sigemptyset(&mask);
    for (int sig : {SIGCHLD, SIGINT, SIGTERM, SIGHUP}) {
        sigaddset(&mask, sig);
    }
    sigprocmask(SIG_BLOCK, &mask, &old_mask);
    signal(SIGPIPE, SIG_IGN);  // a closed stdout (| head) must not kill loomrun mid-job
    int sfd   = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
    auto fail = [&](const status& st, int code) {
        std::fprintf(stderr, "loomrun: %s\n", st.message().c_str());
        if (sfd >= 0) {
            close(sfd);
        }
        return code;
    };
    if (sfd < 0) {
        return fail(system_error(std::string("signalfd: ") + strerror(errno)), exit_failed);
    }
    std::unique_ptr<netns_hosts> net;  // destroyed after the job: namespaces outlive ranks
    std::string bootstrap;
    if (opts.hosts == "netns") {
        auto hosts = netns_hosts::create(opts.ranks);
        if (!hosts) {
            return fail(hosts.error(), hosts.error().code() == LOOM_ERR_INVALID_ARGUMENT
                                           ? exit_bad_args
                                           : exit_failed);
        }
        net       = std::move(*hosts);
        bootstrap = net->address(0) + ":" + std::to_string(netns_bootstrap_port);
    } else if (!chosen->bootstrap.empty()) {
        bootstrap = chosen->bootstrap;
    } else {
        auto port = free_loopback_port();
        if (!port) {
            return fail(port.error(), exit_failed);
        }
        bootstrap = "127.0.0.1:" + std::to_string(*port);
    }
    // What killed jobs left (a killed loomrun cannot tidy up): reclaimed by the next start.
    bootstrap::remove_stale_rendezvous();
    LOOM_LOG_INFO(log::subsystem::init, "loomrun: %d %s, transport %s (%s), bootstrap %s (%s)",
                  opts.ranks, opts.ranks == 1 ? "rank" : "ranks",
                  chosen->transport.empty() ? "unset" : chosen->transport.c_str(),
                  chosen->transport_from.c_str(), bootstrap.c_str(),
                  chosen->bootstrap_from.c_str());
    std::unique_ptr<switch_set> switches;  // --switch: up before the ranks, down after
    if (opts.with_switch) {
        // The switches' links: shared memory when the ranks use it, else tcp.
        std::string links = chosen->transport.ends_with("shm") ? "shm" : "tcp";
        auto set          = switch_set::start(opts.fabric, links, "lr" + std::to_string(getpid()));
        if (!set) {
            return fail(set.error(), exit_failed);
        }
        switches        = std::move(*set);
        opts.switch_env = switches->environment();
    }
    std::unique_ptr<dpu_set> dpus;  // --dpu: up before the ranks, down after
    if (opts.dpu) {
        auto set = dpu_set::start(opts.fabric, "lr" + std::to_string(getpid()), opts.dpu_inc,
                                  opts.dpu_args);
        if (!set) {
            return fail(set.error(), exit_failed);
        }
        dpus            = std::move(*set);
        opts.dpu_dir    = dpus->dir();
        opts.dpu_secret = dpus->secret();
        opts.dpu_pids   = dpus->pids();
        opts.switch_env = dpus->environment();  // --inc: the ranks' way to the DPUs' nodes
    }
    int code;
    {
        job j(opts, *chosen, net.get(), sfd, old_mask);
        if (status st = j.start(bootstrap); !st) {
            j.abandon("loomrun: " + st.message());
        }
        code = j.wait_all();
        if (!j.id().empty()) {  // every rank is reaped: nothing of the job can use them now
            remove_job_segments(j.id());
            if (bootstrap.starts_with("file:")) {  // the user's file rendezvous
                bootstrap::remove_job_rendezvous(bootstrap.substr(5), j.id());
            }
        }
    }
    if (dpus) {
        std::fflush(stdout);
        dpus->stop(opts.grace_s);  // each prints its per-port, per-VC statistics
    }
    if (switches) {
        std::fflush(stdout);
        switches->stop(opts.grace_s);  // each prints its statistics
    }
    net.reset();
    close(sfd);
    if (stats) {
        std::fflush(stdout);
        stats->print(opts.ranks, stdout);
    }
    return code;
}

std::string sibling_program(const std::string& name) {
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n > 0) {
        self[n]         = '\0';
        std::string dir = std::string(self).substr(0, std::string(self).rfind('/'));
        for (const std::string& c : {dir + "/" + name, dir + "/../" + name + "/" + name}) {
            if (access(c.c_str(), X_OK) == 0) {
                return c;
            }
        }
    }
    return name;
}

result<pid_t> start_helper_process(std::vector<std::string> args) {
    pid_t launcher = getpid();
    pid_t pid      = fork();
    if (pid < 0) {
        return system_error("cannot start " + args[0] + ": fork: " + strerror(errno));
    }
    if (pid == 0) {
        // The check after prctl covers a loomrun that died before it.
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != launcher) {
            _exit(128 + SIGKILL);
        }
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, nullptr);
        std::vector<char*> argv;
        for (auto& a : args) {
            argv.push_back(a.data());
        }
        argv.push_back(nullptr);
        execvp(argv[0], argv.data());
        std::fprintf(stderr, "loomrun: cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    return pid;
}

}  // namespace loom::loomrun
