// SPDX-License-Identifier: Apache-2.0
// Prints what bootstrap::discover() makes of this process's environment, one line:
//   ok rank=R size=S source=X job=J bootstrap=B timeout=T
//   error code=C message=M
// test_identity.cc runs it under each launcher's variables.
#include <cstdio>

#include "bootstrap/bootstrap.hh"

int main() {
    auto me = loom::bootstrap::discover();
    if (!me) {
        std::printf("error code=%d message=%s\n", static_cast<int>(me.error().code()),
                    me.error().message().c_str());
        return 0;
    }
    std::printf("ok rank=%d size=%d source=%s job=%s bootstrap=%s timeout=%g\n", me->rank, me->size,
                me->source.c_str(), me->job.c_str(), me->bootstrap.c_str(), me->timeout_s);
    return 0;
}
