// SPDX-License-Identifier: Apache-2.0
// loomrun: what the launcher's files share (docs/architecture.md#rule-thin-mains: main.cc +
// options.cc).
//
//   options.cc   the command line → options (CLI11); unit-tested on its own
//   rank_settings.cc  the user's LOOM_* settings against loomrun's defaults and flags
//   launcher.cc  fork/exec of N ranks with their LOOM_* environment, the event loop that
//                prefixes output, reaps ranks, enforces the timeout and ends the job
//   output.cc    "[rank] " line prefixing of the ranks' pipes
//   link_stats.cc --link-stats: the rank files' directory, the table printed at exit
//   leftovers.cc the job's shm segments, removed when it ends
//   netns.cc     --hosts netns: a bridge, one namespace and veth pair per rank, teardown
//   main.cc      --version, --config, and the exit status
//
// Exit status: 0 when every rank exited 0; else the first failing rank's status (128+signal
// when a signal killed it); 124 when --timeout passed; 130/143 when loomrun itself was
// interrupted; 2 for a bad command line; 1 when loomrun could not start the job.
#pragma once

#include <sys/types.h>

#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.hh"

namespace loom::loomrun {

constexpr int exit_ok       = 0;
constexpr int exit_failed   = 1;    // loomrun could not start the job (netns, fork, pipes)
constexpr int exit_bad_args = 2;    // bad command line
constexpr int exit_timeout  = 124;  // as timeout(1)

struct options {
    int ranks = 0;
    std::string transport;                // --transport; empty: LOOM_TRANSPORT, else shm
    double timeout_s  = 0;                // 0: no timeout
    std::string hosts = "local";          // local | netns
    double grace_s    = 2.0;              // SIGTERM → SIGKILL when ending ranks
    std::string fabric;                   // --fabric: LOOM_FABRIC, over fwd:<transport>
    bool link_stats = false;              // --link-stats: print the link counters at exit
    std::string link_stats_dir;           // set by run_job under --link-stats
    bool with_switch = false;             // --switch: start loom-switch node(s) for the ranks
    std::vector<std::string> switch_env;  // set by run_job under --switch (LOOM_SWITCH…)
    bool dpu = false;                     // --dpu: one loom-dpu per node of --fabric
    std::string dpu_dir, dpu_secret;      // set by run_job under --dpu (sockets, memif secret)
    std::vector<std::pair<pid_t, int>> dpu_pids;  // set by run_job: (pid, node) of each DPU
    bool dpu_inc = false;                         // --inc (with --dpu): the DPUs aggregate too
    std::vector<std::string> dpu_args;            // --dpu-arg: passed to every loom-dpu
    bool show_config   = false;
    bool show_markdown = false;  // with show_config: the README's environment table
    bool show_version  = false;
    bool tag_output    = true;         // "[rank] " before each line of a rank's output
    std::vector<std::string> command;  // PROGRAM ARGS
};

/// What the command line asks for: run, print text and exit (--help), or fail.
struct parsed {
    enum class action { run, print, fail } what = action::fail;
    options opts;
    std::string text;  // --help text (print) or the one-line reason (fail)
};

/// The LOOM_* variables of loomrun's environment that it would otherwise choose for the
/// ranks (name → value, only those the user set).
using user_settings = std::map<std::string, std::string>;

/// What every rank gets that the user may choose, and who chose it ("--transport",
/// "LOOM_TRANSPORT", "loomrun default", …).
struct rank_settings {
    // As given (--fabric wraps it in fwd:); empty: LOOM_TRANSPORT stays unset and the ranks
    // choose (--hosts netns without a transport named).
    std::string transport, transport_from;
    std::string bootstrap, bootstrap_from;  // bootstrap empty: loomrun makes the rendezvous
    std::string job, job_from;              // job empty: loomrun makes a fresh id
    std::string secret;  // the user's LOOM_JOB_SECRET; empty: a fresh one per launch
};

/// The user's settings win over loomrun's defaults; one that cannot work with these options
/// (self with several ranks, a rendezvous under --hosts netns, LOOM_FABRIC unlike --fabric,
/// an unknown transport) is an invalid-argument error that says why.
result<rank_settings> resolve_rank_settings(const options& o, const user_settings& user);

/// Parses `loomrun [flags] -- PROGRAM ARGS` (the "--" may be left out when PROGRAM does not
/// start with '-'). --version and --config parse as flags and are acted on by main.
parsed parse_options(int argc, const char* const* argv);

/// Seconds: plain, or with an s/m/h suffix (as timeout(1)). Positive and finite.
result<double> parse_duration(const std::string& flag, const std::string& text);

/// Writes a rank's output to `fd` a line at a time, each line prefixed with "[rank] " when
/// `tag` (--tag-output, the default) and bare otherwise (as mpirun writes it, so parsers of
/// a program's own output, nccl-tests' among them, read it unchanged).
class line_prefixer {
  public:
    line_prefixer(int rank, int fd, bool tag);
    /// Appends bytes; writes every complete line (and a very long partial one).
    void feed(const char* data, size_t len);
    /// Writes what is left as a last line (a program's final line may lack its newline).
    void finish();

  private:
    std::string prefix_;
    int fd_;
    std::string partial_;
};

/// --hosts netns: one network namespace per rank, joined by veth pairs to a bridge, with
/// addresses 10.77.0.(rank+1)/24 that exist only inside those namespaces (the host side of
/// the bridge has none, so runs cannot collide with each other or with host networks).
/// Names carry loomrun's pid (loom-<pid>-<rank>, bridge lmb<pid>, veth lm<pid>h<rank>), so
/// the next run removes what a killed run left: names whose pid is no longer a loomrun.
class netns_hosts {
  public:
    /// Root only; sets everything up or removes what it made and says what failed.
    static result<std::unique_ptr<netns_hosts>> create(int ranks);
    ~netns_hosts();  // removes the namespaces, links and bridge
    netns_hosts(const netns_hosts&)            = delete;
    netns_hosts& operator=(const netns_hosts&) = delete;

    std::string address(int rank) const;  // 10.77.0.(rank+1)
    /// Moves the calling process (a forked rank, before exec) into the rank's namespace as
    /// `ip netns exec` does: setns, then a private mount namespace with the namespace's own
    /// /sys, so /sys/class/net shows the rank's interfaces.
    status enter(int rank) const;
    /// Removes leftovers of loomrun runs that no longer exist; returns how many.
    static int remove_stale();

  private:
    explicit netns_hosts(int ranks);
    status set_up();
    void tear_down();
    std::string ns_name(int rank) const;
    std::string veth_name(int rank) const;

    int ranks_;
    pid_t owner_;
    std::string bridge_;
    std::vector<int> ns_fds_;
    int made_         = 0;  // ranks whose namespace exists
    bool bridge_made_ = false;
};

/// --link-stats: a fresh temporary directory the ranks write rank-<r>.txt into
/// (LOOM_LINK_STATS_DIR; lines "peer sent_bytes recv_bytes sent_msgs recv_msgs forwarded"),
/// read back after the job; the destructor removes it.
class link_stats_dir {
  public:
    static result<std::unique_ptr<link_stats_dir>> create();
    ~link_stats_dir();
    link_stats_dir(const link_stats_dir&)            = delete;
    link_stats_dir& operator=(const link_stats_dir&) = delete;

    const std::string& path() const { return path_; }
    /// Prints the table (rank, peer, sent/received bytes, messages, forwarded) of ranks
    /// 0..ranks-1; a rank without a file gets a line saying so.
    void print(int ranks, std::FILE* out) const;

  private:
    explicit link_stats_dir(std::string path) : path_(std::move(path)) {}
    std::string path_;
};

/// Removes the shared-memory segments named after `job` (leftovers.cc); returns how many.
int remove_job_segments(const std::string& job);

/// Runs the job; returns loomrun's exit status. Prints one line on stderr when it is not 0.
int run_job(const options& opts);

/// The path of another of loom's programs (loom-switch, loom-dpu) that loomrun starts: next
/// to loomrun's own binary (installed), in the build tree's sibling folder, or else the bare
/// name, found on PATH.
std::string sibling_program(const std::string& name);

/// Starts one of those programs (args[0] and its arguments) as loomrun's child: it dies with
/// loomrun (a SIGKILLed loomrun leaves no switch or DPU behind) and starts with no signal
/// blocked (loomrun blocks them for its signalfd). The pid, or why fork failed.
result<pid_t> start_helper_process(std::vector<std::string> args);

/// The drivers a rank's LOOM_TRANSPORT may name under its fault: wrappers (the one list
/// both --transport's check and LOOM_TRANSPORT's use), and them as the messages print them.
bool known_transport(std::string_view driver);
constexpr const char* known_transports = "shm, tcp, ofi, verbs, dpdk, dpu, self";

}  // namespace loom::loomrun
