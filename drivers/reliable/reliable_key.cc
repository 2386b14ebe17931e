// SPDX-License-Identifier: Apache-2.0
// The job key every frame carries (reliable_wire.hh). It must not be guessable from outside the
// job: a frame from another job, or from someone who knows only the job's name, must never
// change its results. Rank 0 draws a fresh 32-byte salt (getrandom) and publishes it in the
// job's store, which only the job's ranks can read (the tcp rendezvous authenticates every
// client with LOOM_JOB_SECRET); the key is the first 8 bytes of HMAC-SHA-256(secret, job name
// and salt), with the secret the caller passes where it has one. Control path only.
#include <cstring>
#include <string>

#include "base/byte_order.hh"
#include "base/check.hh"
#include "base/log.hh"
#include "base/secret.hh"
#include "drivers/reliable/reliable_endpoint.hh"

namespace loom::drivers::reliable {

result<uint64_t> derive_job_key(const endpoint_config& config, const options& opts) {
    std::string salt;
    if (config.store != nullptr) {
        std::string name = "reliable/" + opts.name + "/salt";
        if (config.rank == 0) {
            LOOM_ASSIGN(salt, random_secret_hex());
            if (status st = config.store->set(name, salt); !st.is_ok()) {
                return st.prefix(opts.name + ": rank 0: publishing the job key's salt: ");
            }
        } else {
            auto got = config.store->get(name, config.timeout_s);
            if (!got) {
                return status(got.error())
                    .prefix(opts.name + ": rank " + std::to_string(config.rank) +
                            ": waiting for rank 0's job key salt: ");
            }
            salt = *got;
        }
    }
    std::string key = opts.secret.empty() ? std::string("loom reliable frames") : opts.secret;
    digest256 d     = hmac_sha256(key, "loom reliable v1\n" + config.job + "\n" + salt);
    return be::get64(d.data());
}

}  // namespace loom::drivers::reliable
