// SPDX-License-Identifier: Apache-2.0
// Malformed and misaddressed packets sent to a running loom-switch (wrong magic, wrong
// version, truncated, bad checksum, slot out of range; unknown job and contributor outside
// the communicator, which are not the sender's membership: forged) are dropped and counted
// by reason in its statistics, while a
// concurrent legitimate all-reduce completes exactly.
#include <cstdlib>
#include <vector>

#include "drivers/datagram.hh"
#include "switch_harness.hh"
#include "test_main.hh"

using namespace loom;
using namespace loom::inc;
using namespace loom::inc::test;

namespace {

constexpr uint32_t ranks = 4;
constexpr size_t count   = 4000;

std::vector<uint8_t> contribution(uint64_t job, uint64_t comm, uint32_t slot,
                                  uint32_t contributor) {
    header h;
    h.kind        = packet_kind::contribute;
    h.dtype       = LOOM_INT32;
    h.job         = job;
    h.comm        = comm;
    h.seq         = 1;
    h.slot        = slot;
    h.count       = 4;
    h.contributor = contributor;
    int32_t v[4]  = {1, 2, 3, 4};
    std::vector<uint8_t> p(header_bytes + sizeof v);
    p.resize(encode(h, v, p.data()));
    return p;
}

// Joins a small group of its own (job 1, comm 9) so packets addressed to it reach the
// aggregator's checks, then sends one packet of each kind of garbage.
void send_garbage(drivers::datagram_endpoint& l) {
    auto good = contribution(1, 9, 0, 0);
    auto p    = good;
    p[0] ^= 0xff;  // magic
    l.send(p.data(), p.size());
    p    = good;
    p[4] = 1;  // the version with 32-bit ids
    l.send(p.data(), p.size());
    l.send(good.data(), 30);  // truncated
    p = good;
    p.back() ^= 1;  // a payload bit: the checksum no longer matches
    l.send(p.data(), p.size());
    p = contribution(1, 9, 99, 0);  // slot outside the group's 2
    l.send(p.data(), p.size());
    p = contribution(77, 9, 0, 0);  // a job never admitted
    l.send(p.data(), p.size());
    p = contribution(1, 9, 0, 5);  // contributor outside members 0..1
    l.send(p.data(), p.size());
}

void malformed_counted_legit_exact(void**) {
    switch_proc s = start_switch({"--listen", fresh_address(false)});
    std::vector<std::vector<int32_t>> in(ranks, std::vector<int32_t>(count)),
        out(ranks, std::vector<int32_t>(count));
    for (uint32_t r = 0; r < ranks; ++r) {
        for (size_t i = 0; i < count; ++i) {
            in[r][i] = int32_t(r * 31 + i);
        }
    }
    auto l = drivers::connect_datagram(s.address, 5);
    assert_true(l.is_ok());
    auto rank = [&](uint32_t r) {
        join_request j = flat_join(ranks, 2);
        step a{1, LOOM_INT32, {}, in[r].data(), out[r].data(), count};
        step b{2, LOOM_INT32, {}, in[r].data(), out[r].data(), count};
        return run_rank(s.address, 1, 1, r, j, {a, b});
    };
    check_ranks(run_ranks(ranks, rank, [&] {
        assert_true(join_node(**l, 1, 9, 0, flat_join(2, 2), 5).is_ok());
        send_garbage(**l);
    }));
    for (uint32_t r = 0; r < ranks; ++r) {
        for (size_t i = 0; i < count; ++i) {
            assert_int_equal(out[r][i], int32_t(186 + 4 * i));
        }
    }
    // A job never admitted and a contributor outside the group are not this link's
    // membership: refused before the aggregator, as forged.
    std::string text = wait_for_stat(s.address, "forged", 2);
    assert_int_equal(stat_value(text, "forged"), 2);
    for (const char* name : {"malformed_bad_magic", "malformed_bad_version", "malformed_truncated",
                             "malformed_bad_checksum", "bad_slot"}) {
        if (stat_value(text, name) != 1) {
            LOOM_FAIL(std::string(name) + " is " + std::to_string(stat_value(text, name)) +
                      ", not 1:\n" + text);
        }
    }
    std::string final_text = stop_cleanly(s);
    assert_int_equal(stat_value(final_text, "malformed_bad_magic"), 1);
}

}  // namespace

LOOM_SWITCH_TEST_MAIN("inc_switch_malformed", cmocka_unit_test(malformed_counted_legit_exact))
