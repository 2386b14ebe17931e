// SPDX-License-Identifier: Apache-2.0
// The wire tag's layout: the fields tile the 64 bits without overlap, every field reads back
// what was written into it, the sequence field is never zero (so the mismatch rule always
// applies to engine traffic), communicator ids and sequence numbers wrap where the layout
// says, and step tags that do not fit are refused rather than folded onto another's bits.
#include <cstdint>

#include "base/wire_tag.hh"
#include "test_main.hh"

using namespace loom;

static void the_fields_tile_the_tag(void**) {
    const uint64_t fields[] = {
        wire::field_mask(wire::k_bits, wire::k_shift),
        wire::field_mask(wire::tag_bits, wire::tag_shift),
        wire::field_mask(wire::channel_bits, wire::channel_shift),
        wire::seq_mask,
        wire::comm_mask,
        wire::p2p_bit,
        wire::control_tag_bit,
    };
    uint64_t seen = 0;
    for (uint64_t f : fields) {
        assert_int_equal(seen & f, 0);  // no two fields share a bit
        seen |= f;
    }
    assert_true(seen == ~uint64_t{0});
    assert_true(wire::call_tag_mask == (wire::p2p_bit | wire::comm_mask | wire::seq_mask));
    assert_int_equal(wire::call_tag_mask & wire::control_tag_bit, 0);
}

static void call_bits_read_back(void**) {
    for (uint16_t comm : {0, 1, 513, 1023}) {
        for (uint32_t seq : {0u, 1u, 77u, (1u << 20) - 3}) {
            for (bool p2p : {false, true}) {
                uint64_t t = wire::call_bits(comm, seq, p2p);
                assert_int_equal(t & ~wire::call_tag_mask, 0);
                assert_int_equal(wire::comm_of(t), comm);
                assert_int_equal(wire::seq_of(t), seq + 1);
                assert_int_equal(wire::is_p2p(t), p2p);
            }
        }
    }
}

static void the_sequence_field_is_never_zero(void**) {
    const uint32_t period = (1u << wire::seq_bits) - 1;
    for (uint32_t seq : {0u, period - 1, period, period + 1, 2 * period, ~0u}) {
        uint64_t t = wire::call_bits(0, seq, false);
        assert_int_not_equal(wire::seq_of(t), 0);
        assert_true((t & wire::call_tag_mask) != 0);
    }
    // The counter wraps with period 2^20 - 1: calls that far apart share call bits.
    assert_true(wire::call_bits(3, 5, false) == wire::call_bits(3, 5 + period, false));
    assert_true(wire::call_bits(3, 5, false) != wire::call_bits(3, 6, false));
}

static void communicator_ids_wrap(void**) {
    assert_int_equal(wire::comm_id_count, 1024);
    assert_int_equal(wire::wrap_comm_id(1023), 1023);
    assert_int_equal(wire::wrap_comm_id(1024), 0);
    assert_int_equal(wire::wrap_comm_id(1024 + 7), 7);
    // An id past the field wraps the same way in the tag as in a split's numbering.
    uint64_t t = wire::call_bits(static_cast<uint16_t>(1024 + 7), 0, false);
    assert_int_equal(wire::comm_of(t), wire::wrap_comm_id(1024 + 7));
}

static void message_bits_fit_or_refuse(void**) {
    uint32_t m = 0;
    assert_true(wire::message_bits(0, 0, &m));
    assert_int_equal(m, 0);
    const uint32_t last =
        (wire::max_channels - 1) * wire::channel_stride + wire::max_channel_tag - 1;
    const uint32_t k_max = (1u << wire::k_bits) - 1;
    assert_true(wire::message_bits(last, k_max, &m));
    assert_true((uint64_t{m} & ~wire::step_mask) == 0);
    assert_true(uint64_t{m} == wire::step_mask);
    // Channel 2, tag 3, k 4 land in their own fields.
    assert_true(wire::message_bits(2 * wire::channel_stride + 3, 4, &m));
    assert_int_equal(m, (2u << wire::channel_shift) | (3u << wire::tag_shift) | 4u);
    assert_false(wire::message_bits(wire::max_channel_tag, 0, &m));  // tag too large
    assert_false(wire::message_bits(wire::max_channels * wire::channel_stride, 0, &m));
    assert_false(wire::message_bits(0, k_max + 1, &m));
}

static void the_mismatch_rule(void**) {
    const uint64_t a = wire::call_bits(1, 9, false) | 5, b = wire::call_bits(1, 9, false) | 6;
    assert_true(wire::same_call_other_imm(a, 1, b, 2));   // same call, other signature
    assert_false(wire::same_call_other_imm(a, 1, b, 1));  // same signature
    assert_false(wire::same_call_other_imm(a, 1, wire::call_bits(1, 10, false), 2));
    assert_false(wire::same_call_other_imm(a, 1, wire::call_bits(1, 9, true), 2));
    assert_false(wire::same_call_other_imm(5, 1, 5, 2));  // raw driver tags are exempt
}

static void control_kinds_ride_below_the_call_bits(void**) {
    const uint64_t call = wire::call_bits(2, 40, true);
    const uint64_t tag =
        wire::control_tag_bit | call | static_cast<uint32_t>(wire::control_kind::query);
    assert_true(wire::control_kind_of(tag) == wire::control_kind::query);
    assert_int_equal(wire::seq_of(tag), wire::seq_of(call));
    assert_int_equal(wire::comm_of(tag), 2);
    assert_true(wire::is_p2p(tag));
}

LOOM_TEST_MAIN("base_wire_tag", cmocka_unit_test(the_fields_tile_the_tag),
               cmocka_unit_test(call_bits_read_back),
               cmocka_unit_test(the_sequence_field_is_never_zero),
               cmocka_unit_test(communicator_ids_wrap),
               cmocka_unit_test(message_bits_fit_or_refuse), cmocka_unit_test(the_mismatch_rule),
               cmocka_unit_test(control_kinds_ride_below_the_call_bits))
