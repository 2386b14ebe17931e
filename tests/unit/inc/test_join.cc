// SPDX-License-Identifier: Apache-2.0
// The member's side of a join (inc/node/join.hh joiner), in-process against a recording sink:
// nothing is sent before the node's challenge; the join then sent carries the request and a
// MAC over the challenge's nonce (none without a ticket); it is sent again every resend_s,
// or once when resend_s is 0; packets of another job or communicator are not the
// conversation's; joined gives the slots granted, nack the code and reason as sent.
#include <cstring>
#include <string>
#include <vector>

#include "inc/node/join.hh"
#include "test_main.hh"

using namespace loom;
using namespace loom::inc;

namespace {

struct recording_sink final : drivers::datagram_sink {
    std::vector<std::vector<uint8_t>> sent;
    void send(const uint8_t* p, size_t len) override { sent.emplace_back(p, p + len); }
};

/// A packet as it would arrive: encoded, then parsed back (header and payload).
struct arrived {
    std::vector<uint8_t> bytes = std::vector<uint8_t>(header_bytes + max_payload_bytes);
    header h;
    const uint8_t* payload = nullptr;
};

void deliver(arrived& a, size_t len) {
    assert_int_equal(int(parse(a.bytes.data(), len, &a.h, &a.payload)), int(parse_error::none));
}

arrived challenge(const join_nonce& nonce) {
    arrived a;
    size_t len =
        control_packet(packet_kind::challenge, 0, 0, 0,
                       std::string_view(reinterpret_cast<const char*>(nonce.data()), nonce.size()),
                       a.bytes.data());
    deliver(a, len);
    return a;
}

arrived answer(packet_kind kind, uint64_t job, uint64_t comm, uint32_t seq, uint32_t slot,
               std::string_view text) {
    arrived a;
    deliver(a, control_packet(kind, job, comm, 0, text, a.bytes.data(), seq, slot));
    return a;
}

join_request request() {
    join_request r;
    r.members  = 4;
    r.expected = 4;
    r.slots    = 8;
    r.flags    = join_deterministic;
    return r;
}

void the_join_follows_the_challenge_and_signs_its_nonce(void**) {
    const std::string ticket(32, '\x5a');
    join_nonce nonce{};
    for (size_t i = 0; i < nonce.size(); ++i) {
        nonce[i] = uint8_t(i * 7 + 1);
    }
    joiner j(3, 9, 2, request(), ticket, 0);
    recording_sink out;
    j.tick(out, 0);
    assert_true(out.sent.empty());
    assert_true(j.current() == joiner::state::awaiting_challenge);

    auto c = challenge(nonce);
    assert_true(j.on_packet(c.h, c.payload));
    assert_true(j.current() == joiner::state::awaiting_answer);
    j.tick(out, 0);
    assert_int_equal(out.sent.size(), 1);

    header h;
    const uint8_t* body = nullptr;
    assert_int_equal(int(parse(out.sent[0].data(), out.sent[0].size(), &h, &body)),
                     int(parse_error::none));
    assert_true(h.kind == packet_kind::join);
    assert_int_equal(h.job, 3);
    assert_int_equal(h.comm, 9);
    assert_int_equal(h.contributor, 2);
    join_request got;
    const uint8_t* mac = nullptr;
    assert_true(decode_join(body, payload_bytes(h), &got, &mac));
    assert_true(got == request());
    assert_non_null(mac);
    auto key       = std::span(reinterpret_cast<const uint8_t*>(ticket.data()), ticket.size());
    digest256 want = join_mac(key, nonce, 3, 9, 2, request());
    assert_memory_equal(mac, want.data(), mac_bytes);
    // The MAC covers every bit of the 64-bit ids: ids that differ only in their high
    // halves (a 32-bit id's collision) sign differently.
    const uint64_t high = uint64_t(1) << 32;
    digest256 job_high  = join_mac(key, nonce, 3 + high, 9, 2, request());
    digest256 comm_high = join_mac(key, nonce, 3, 9 + high, 2, request());
    assert_memory_not_equal(job_high.data(), want.data(), mac_bytes);
    assert_memory_not_equal(comm_high.data(), want.data(), mac_bytes);
    assert_memory_not_equal(job_high.data(), comm_high.data(), mac_bytes);

    // Without a ticket the join is unsigned.
    joiner plain(3, 9, 2, request(), {}, 0);
    recording_sink out2;
    assert_true(plain.on_packet(c.h, c.payload));
    plain.tick(out2, 0);
    assert_int_equal(out2.sent.size(), 1);
    assert_int_equal(out2.sent[0].size(), header_bytes + join_request_bytes);
}

void the_join_is_resent_only_when_asked(void**) {
    auto c = challenge(join_nonce{});
    joiner lossy(1, 1, 0, request(), {}, 0.05);
    recording_sink out;
    assert_true(lossy.on_packet(c.h, c.payload));
    lossy.tick(out, 10.0);
    lossy.tick(out, 10.01);
    assert_int_equal(out.sent.size(), 1);
    lossy.tick(out, 10.06);
    assert_int_equal(out.sent.size(), 2);

    joiner once(1, 1, 0, request(), {}, 0);
    recording_sink out2;
    assert_true(once.on_packet(c.h, c.payload));
    for (double t : {0.0, 1.0, 100.0}) {
        once.tick(out2, t);
    }
    assert_int_equal(out2.sent.size(), 1);
}

void answers_end_the_conversation(void**) {
    auto c = challenge(join_nonce{});
    joiner j(5, 6, 0, request(), {}, 0);
    // Before the challenge an answer is not the conversation's.
    auto early = answer(packet_kind::joined, 5, 6, 0, 8, {});
    assert_false(j.on_packet(early.h, early.payload));
    assert_true(j.on_packet(c.h, c.payload));
    assert_false(j.on_packet(c.h, c.payload));  // one challenge per conversation
    auto other_job  = answer(packet_kind::joined, 4, 6, 0, 8, {});
    auto other_comm = answer(packet_kind::joined, 5, 7, 0, 8, {});
    auto stats      = answer(packet_kind::stats_reply, 5, 6, 0, 0, "x 1");
    assert_false(j.on_packet(other_job.h, other_job.payload));
    assert_false(j.on_packet(other_comm.h, other_comm.payload));
    assert_false(j.on_packet(stats.h, stats.payload));
    assert_true(j.current() == joiner::state::awaiting_answer);
    auto joined = answer(packet_kind::joined, 5, 6, 0, 6, {});
    assert_true(j.on_packet(joined.h, joined.payload));
    assert_true(j.current() == joiner::state::joined);
    assert_int_equal(j.slots(), 6);

    joiner r(5, 6, 0, request(), {}, 0);
    assert_true(r.on_packet(c.h, c.payload));
    auto nack = answer(packet_kind::nack, 5, 6, uint32_t(LOOM_ERR_NO_RESOURCE), 0, "no slots");
    assert_true(r.on_packet(nack.h, nack.payload));
    assert_true(r.current() == joiner::state::refused);
    assert_int_equal(r.refusal(), LOOM_ERR_NO_RESOURCE);
    assert_string_equal(r.reason().c_str(), "no slots");
}

}  // namespace

LOOM_TEST_MAIN("inc_join", cmocka_unit_test(the_join_follows_the_challenge_and_signs_its_nonce),
               cmocka_unit_test(the_join_is_resent_only_when_asked),
               cmocka_unit_test(answers_end_the_conversation))
