// SPDX-License-Identifier: Apache-2.0
// drivers/reliable's bookkeeping without links or processes: the timer wheel (fires at or
// after the time, never before; re-arm and disarm; timers further than one turn; a long pause
// visits each bucket once), the send window (cumulative acks, SACK, holes fast-retransmitted
// once, forged acks refused, sequence numbers wrapping), the receive window (next, ahead,
// duplicate, beyond, SACK bits, wrap) and the wire header (round trip, checksum, truncation).
#include <cstring>
#include <vector>

#include "drivers/reliable/reliable_wheel.hh"
#include "drivers/reliable/reliable_window.hh"
#include "drivers/reliable/reliable_wire.hh"
#include "test_main.hh"

using namespace loom::drivers::reliable;

namespace {

struct probe : timer_node {
    int id    = 0;
    int fired = 0;
};

void wheel_fires_on_time_never_early(void**) {
    timer_wheel w;
    w.init(16, 0.001, 100.0);
    std::vector<probe> t(5);
    for (int i = 0; i < 5; ++i) {
        t[size_t(i)].id = i;
    }
    w.arm(&t[0], 100.0005);  // rounds up to tick 1
    w.arm(&t[1], 100.0025);
    w.arm(&t[2], 100.0495);  // tick 50, beyond one turn (16 ticks): waits for its own turn
    w.arm(&t[3], 99.0);      // in the past: next tick
    w.arm(&t[4], 100.002);
    w.disarm(&t[4]);
    assert_int_equal(w.armed(), 4);
    auto fire = [](timer_node* n) { ++static_cast<probe*>(n)->fired; };
    assert_int_equal(w.advance(100.0009, fire), 0);
    assert_int_equal(w.advance(100.0011, fire), 2);  // t0 and t3
    assert_int_equal(t[0].fired, 1);
    assert_int_equal(t[3].fired, 1);
    assert_int_equal(w.advance(100.0029, fire), 0);
    assert_int_equal(w.advance(100.0031, fire), 1);
    assert_int_equal(t[1].fired, 1);
    // 100.050 is tick 50 = bucket 2 again after three turns: not before.
    assert_int_equal(w.advance(100.0341, fire), 0);
    assert_int_equal(t[2].fired, 0);
    assert_int_equal(w.advance(100.0501, fire), 1);
    assert_int_equal(t[2].fired, 1);
    assert_int_equal(t[4].fired, 0);
    assert_int_equal(w.armed(), 0);
}

void wheel_rearm_from_fire_and_long_pause(void**) {
    timer_wheel w;
    w.init(8, 0.001, 0.0);
    probe p;
    w.arm(&p, 0.001);
    int count = 0;
    // Re-armed from inside fire(): into the same bucket one turn later, not fired twice now.
    w.advance(0.0015, [&](timer_node* n) {
        ++count;
        w.arm(n, 0.009);
    });
    assert_int_equal(count, 1);
    assert_true(p.armed);
    // A pause of many turns: every due timer fires exactly once.
    std::vector<probe> many(100);
    for (size_t i = 0; i < many.size(); ++i) {
        w.arm(&many[i], 0.002 + 0.0001 * double(i));
    }
    int fired = w.advance(10.0, [&](timer_node* n) { ++static_cast<probe*>(n)->fired; });
    assert_int_equal(fired, 101);
    for (auto& m : many) {
        assert_int_equal(m.fired, 1);
    }
    assert_int_equal(w.armed(), 0);
}

void window_cumulative_ack_and_sack_holes(void**) {
    send_window w;
    w.init(16, 1000);
    for (int i = 0; i < 10; ++i) {
        assert_non_null(w.push());
    }
    assert_int_equal(w.in_flight(), 10);
    std::vector<uint32_t> released, holes;
    auto rel  = [&](tx_slot* s) { released.push_back(s->seq); };
    auto hole = [&](tx_slot* s) { holes.push_back(s->seq); };
    // 1000..1002 arrived; 1003 lost; 1004, 1005, 1007 held by the receiver.
    assert_true(w.apply_ack(1003, 0b1011, rel, hole));
    assert_int_equal(released.size(), 3);
    assert_int_equal(released[2], 1002);
    assert_int_equal(w.base(), 1003);
    // Holes: 1003 (overtaken by 1007: 4 >= 3) and 1006 (1 < 3: not yet).
    assert_int_equal(holes.size(), 1);
    assert_int_equal(holes[0], 1003);
    assert_true(w.at(1004)->sacked);
    assert_false(w.at(1006)->sacked);
    // The same ack again (a duplicate): the hole is not retransmitted twice.
    assert_true(w.apply_ack(1003, 0b1011, rel, hole));
    assert_int_equal(holes.size(), 1);
    // An ack of frames never sent is refused and changes nothing.
    assert_false(w.apply_ack(2000, 0, rel, hole));
    assert_int_equal(w.base(), 1003);
    // Everything arrives.
    assert_true(w.apply_ack(1010, 0, rel, hole));
    assert_true(w.empty());
    assert_int_equal(released.size(), 10);
    // An old ack after that is harmless.
    assert_true(w.apply_ack(1005, 0, rel, hole));
    assert_int_equal(released.size(), 10);
}

void window_full_and_wraparound(void**) {
    send_window w;
    w.init(8, 0xfffffffcu);
    for (int i = 0; i < 8; ++i) {
        assert_false(w.full());
        w.push();
    }
    assert_true(w.full());
    assert_int_equal(w.next(), 4);  // wrapped
    assert_non_null(w.at(0xfffffffeu));
    assert_non_null(w.at(2));
    assert_null(w.at(4));
    int n = 0;
    assert_true(w.apply_ack(
        1, 0, [&](tx_slot*) { ++n; }, [](tx_slot*) {}));
    assert_int_equal(n, 5);  // fffffffc..0
    assert_int_equal(w.base(), 1);
    assert_false(w.full());

    recv_window r;
    r.init(8, 64);
    r.start(0xfffffffeu);
    uint8_t f[64] = {7};
    using v       = recv_window::verdict;
    assert_true(r.classify(0xfffffffeu) == v::next);
    assert_true(r.classify(0xffffffffu) == v::ahead);
    assert_true(r.classify(3) == v::ahead);
    assert_true(r.classify(6) == v::beyond);  // 8 ahead
    assert_true(r.classify(0xfffffff0u) == v::duplicate);
    r.store(1, f, 10);  // expected + 3
    assert_true(r.classify(1) == v::duplicate);
    assert_int_equal(r.sack(), 0b100);
    r.store(0xffffffffu, f, 10);
    assert_int_equal(r.sack(), 0b101);
    r.advance();  // fffffffe processed
    const uint8_t* data = nullptr;
    size_t len          = 0;
    assert_true(r.peek(&data, &len));
    assert_int_equal(len, 10);
    assert_int_equal(data[0], 7);
    r.advance();
    assert_int_equal(r.expected(), 0);
    assert_false(r.peek(&data, &len));
    assert_int_equal(r.sack(), 0b1);  // 1 = expected + 1
    assert_true(r.classify(0xffffffffu) == v::duplicate);
}

void wire_round_trip_and_checks(void**) {
    header h;
    h.kind    = uint8_t(frame_kind::data);
    h.flags   = flag_ack | flag_rndv;
    h.body    = 5;
    h.src     = 3;
    h.dst     = 70000;
    h.key     = 0x0123456789abcdefULL;
    h.src_inc = 11;
    h.dst_inc = 12;
    h.seq     = 0xfffffff0u;
    h.ack     = 9;
    h.sack    = 0x8000000000000001ULL;
    h.msg_id  = 77;
    h.tag     = 0x8000000000000042ULL;
    h.imm     = 5;
    h.msg_len = uint64_t(1) << 33;
    h.offset  = 8160;
    uint8_t frame[header_bytes + 5];
    encode(h, frame);
    std::memcpy(frame + header_bytes, "hello", 5);
    seal(frame, crc32c(0, frame + header_bytes, 5));
    header d;
    assert_true(decode(frame, sizeof frame, &d) == parse_result::ok);
    assert_int_equal(d.dst, 70000);
    assert_int_equal(d.key, h.key);
    assert_int_equal(d.seq, h.seq);
    assert_int_equal(d.sack, h.sack);
    assert_int_equal(d.tag, h.tag);
    assert_int_equal(d.msg_len, h.msg_len);
    assert_int_equal(d.offset, h.offset);
    assert_int_equal(d.flags, h.flags);
    // crc32c's check value.
    assert_int_equal(crc32c(0, "123456789", 9), 0xe3069283u);
    // A flipped payload bit, a flipped header bit, a rewritten vc (allowed), a short frame,
    // a wrong magic.
    frame[header_bytes + 2] ^= 1;
    assert_true(decode(frame, sizeof frame, &d) == parse_result::bad_checksum);
    frame[header_bytes + 2] ^= 1;
    frame[60] ^= 0x10;
    assert_true(decode(frame, sizeof frame, &d) == parse_result::bad_checksum);
    frame[60] ^= 0x10;
    // A router rewrites the vc byte on the way: the frame stays whole.
    frame[vc_field] = 1;
    assert_true(decode(frame, sizeof frame, &d) == parse_result::ok);
    assert_int_equal(d.vc, 1);
    frame[vc_field] = 0;
    assert_true(decode(frame, sizeof frame - 1, &d) == parse_result::truncated);
    assert_true(decode(frame, 40, &d) == parse_result::truncated);
    frame[0] ^= 0xff;
    assert_true(decode(frame, sizeof frame, &d) == parse_result::bad_magic);
}

}  // namespace

LOOM_TEST_MAIN("drivers_reliable_units", cmocka_unit_test(wheel_fires_on_time_never_early),
               cmocka_unit_test(wheel_rearm_from_fire_and_long_pause),
               cmocka_unit_test(window_cumulative_ack_and_sack_holes),
               cmocka_unit_test(window_full_and_wraparound),
               cmocka_unit_test(wire_round_trip_and_checks))
