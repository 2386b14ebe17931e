// SPDX-License-Identifier: Apache-2.0
// What a job leaves behind when it ends badly. The shm driver unlinks a rank's segment as
// soon as every peer has mapped it, so only a job ended during start-up (a rank killed, a
// timeout) can leave segments; they are named after the job ("loom-<job>-<rank>.<pid>", and
// "loom-<job>.s<n>c<c>-..." for split communicators), and once every rank is reaped loomrun
// removes them. What a SIGKILLed loomrun leaves (its ranks die with it: PR_SET_PDEATHSIG) is
// removed by the next job's shm driver, which unlinks segments whose owner is dead. The same
// holds for bootstrap directories (runtime/bootstrap: remove_job_rendezvous after the job,
// remove_stale_rendezvous when loomrun starts).
#include <dirent.h>
#include <sys/mman.h>

#include <string>

#include "loomrun.hh"

namespace loom::loomrun {

int remove_job_segments(const std::string& job) {
    std::string stem = "loom-";
    for (char c : job) {  // as the shm driver spells a job in a segment name
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '.' || c == '_';
        stem += ok ? c : '_';
    }
    DIR* dir = opendir("/dev/shm");
    if (dir == nullptr) {
        return 0;
    }
    int removed = 0;
    while (dirent* e = readdir(dir)) {
        std::string name = e->d_name;
        if (name.size() > stem.size() && name.starts_with(stem) &&
            (name[stem.size()] == '-' || name[stem.size()] == '.') &&
            shm_unlink(("/" + name).c_str()) == 0) {
            ++removed;
        }
    }
    closedir(dir);
    return removed;
}

}  // namespace loom::loomrun
