// SPDX-License-Identifier: Apache-2.0
// inc/protocol: packets survive encode → parse for every kind and dtype, the header is
// big-endian at the documented offsets, CRC32C matches its check value, and every kind of
// malformed packet is refused with its own reason.
#include <cstring>
#include <vector>

#include "inc/protocol/packet.hh"
#include "test_main.hh"

using namespace loom;
using namespace loom::inc;

namespace {

header sample(loom_dtype_t dtype, uint32_t count) {
    header h;
    h.kind        = packet_kind::contribute;
    h.dtype       = dtype;
    h.op          = LOOM_MAX;
    h.flags       = flag_deterministic | flag_last_chunk;
    h.job         = 0x0102030405060708ull;  // 64-bit ids: every byte travels
    h.comm        = 0x1112131415161718ull;
    h.seq         = 0xa0b0c0d0;
    h.slot        = 31;
    h.offset      = 0x0000000500000006ull;
    h.count       = count;
    h.contributor = 5;
    return h;
}

std::vector<uint8_t> packet_of(const header& h) {
    std::vector<uint8_t> payload(payload_bytes(h));
    for (size_t i = 0; i < payload.size(); ++i) {
        payload[i] = uint8_t(i * 7 + 1);
    }
    std::vector<uint8_t> p(header_bytes + payload.size());
    assert_int_equal(encode(h, payload.data(), p.data()), p.size());
    return p;
}

void crc32c_check_value(void**) {
    const char* text = "123456789";
    assert_int_equal(crc32c(0, text, 9), 0xe3069283u);  // the standard check value
    // Chaining: CRC of a then b equals CRC of a·b.
    assert_int_equal(crc32c(crc32c(0, text, 4), text + 4, 5), 0xe3069283u);
    std::vector<uint8_t> big(10007);
    for (size_t i = 0; i < big.size(); ++i) {
        big[i] = uint8_t(i * 131 + 17);
    }
    uint32_t whole = crc32c(0, big.data(), big.size());
    assert_int_equal(crc32c(crc32c(0, big.data(), 3333), big.data() + 3333, big.size() - 3333),
                     whole);
}

void round_trip_every_dtype_and_kind(void**) {
    for (loom_dtype_t t :
         {LOOM_INT32, LOOM_INT64, LOOM_FLOAT32, LOOM_FLOAT64, LOOM_BFLOAT16, LOOM_FLOAT16}) {
        for (packet_kind k :
             {packet_kind::contribute, packet_kind::result, packet_kind::ack, packet_kind::nack}) {
            header h = sample(t, uint32_t(max_payload_bytes / element_bytes(t)));
            h.kind   = k;
            auto p   = packet_of(h);
            header back;
            const uint8_t* payload = nullptr;
            assert_int_equal(int(parse(p.data(), p.size(), &back, &payload)),
                             int(parse_error::none));
            assert_int_equal(int(back.kind), int(k));
            assert_int_equal(back.dtype, t);
            assert_int_equal(back.op, LOOM_MAX);
            assert_int_equal(back.flags, flag_deterministic | flag_last_chunk);
            assert_int_equal(back.job, h.job);
            assert_int_equal(back.comm, h.comm);
            assert_int_equal(back.seq, h.seq);
            assert_int_equal(back.slot, h.slot);
            assert_true(back.offset == h.offset);
            assert_int_equal(back.count, h.count);
            assert_int_equal(back.contributor, h.contributor);
            assert_ptr_equal(payload, p.data() + header_bytes);
        }
    }
}

void header_is_big_endian_at_its_offsets(void**) {
    auto p                = packet_of(sample(LOOM_FLOAT32, 3));
    const uint8_t magic[] = {'L', 'M', 'N', 'C'};
    assert_memory_equal(p.data(), magic, 4);
    assert_int_equal(p[offsetof(wire_header, version)], packet_version);
    // The layout of version 2: 64-bit job and communicator ids after root, the rest after.
    assert_int_equal(offsetof(wire_header, job), 12);
    assert_int_equal(offsetof(wire_header, comm), 20);
    assert_int_equal(offsetof(wire_header, seq), 28);
    assert_int_equal(offsetof(wire_header, offset), 36);
    assert_int_equal(header_bytes, 56);
    const uint8_t job[] = {1, 2, 3, 4, 5, 6, 7, 8};
    assert_memory_equal(p.data() + offsetof(wire_header, job), job, 8);
    const uint8_t comm[] = {0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18};
    assert_memory_equal(p.data() + offsetof(wire_header, comm), comm, 8);
    const uint8_t seq[] = {0xa0, 0xb0, 0xc0, 0xd0};
    assert_memory_equal(p.data() + offsetof(wire_header, seq), seq, 4);
    const uint8_t offset[] = {0, 0, 0, 5, 0, 0, 0, 6};
    assert_memory_equal(p.data() + offsetof(wire_header, offset), offset, 8);
    assert_int_equal(p.size(), header_bytes + 12);
}

parse_error parse_of(const std::vector<uint8_t>& p) {
    header h;
    return parse(p.data(), p.size(), &h, nullptr);
}

// Rewrites the checksum after a deliberate header change, so the check under test is the
// field's own and not the checksum's.
void reseal(std::vector<uint8_t>& p) {
    std::memset(p.data() + offsetof(wire_header, checksum), 0, 4);
    uint32_t crc = crc32c(0, p.data(), p.size());
    for (int i = 0; i < 4; ++i) {
        p[offsetof(wire_header, checksum) + size_t(i)] = uint8_t(crc >> (24 - 8 * i));
    }
}

void malformed_packets_are_refused_with_their_reason(void**) {
    auto good = packet_of(sample(LOOM_FLOAT32, 16));
    assert_int_equal(int(parse_of(good)), int(parse_error::none));

    auto p = good;
    p.resize(header_bytes - 1);
    assert_int_equal(int(parse_of(p)), int(parse_error::truncated));
    p = good;
    p.pop_back();
    assert_int_equal(int(parse_of(p)), int(parse_error::truncated));
    p = good;
    p.push_back(0);
    assert_int_equal(int(parse_of(p)), int(parse_error::bad_length));

    p    = good;
    p[0] = 'X';
    assert_int_equal(int(parse_of(p)), int(parse_error::bad_magic));
    p                                 = good;
    p[offsetof(wire_header, version)] = 1;  // the layout with 32-bit ids
    assert_int_equal(int(parse_of(p)), int(parse_error::bad_version));
    p[offsetof(wire_header, version)] = 3;
    assert_int_equal(int(parse_of(p)), int(parse_error::bad_version));
    p                              = good;
    p[offsetof(wire_header, kind)] = last_packet_kind + 1;
    assert_int_equal(int(parse_of(p)), int(parse_error::bad_kind));
    p                               = good;
    p[offsetof(wire_header, dtype)] = LOOM_INT8;  // not one the aggregator reduces
    reseal(p);
    assert_int_equal(int(parse_of(p)), int(parse_error::bad_dtype));
    p                            = good;
    p[offsetof(wire_header, op)] = LOOM_PROD;
    reseal(p);
    assert_int_equal(int(parse_of(p)), int(parse_error::bad_op));

    // A count whose payload would exceed the limit (and would wrap 32-bit arithmetic).
    p = good;
    for (int i = 0; i < 4; ++i) {
        p[offsetof(wire_header, count) + size_t(i)] = 0xff;
    }
    reseal(p);
    assert_int_equal(int(parse_of(p)), int(parse_error::too_large));

    p = good;
    p[header_bytes + 5] ^= 0x10;  // a payload bit
    assert_int_equal(int(parse_of(p)), int(parse_error::bad_checksum));
    p = good;
    p[offsetof(wire_header, slot) + 3] ^= 1;  // a header bit
    assert_int_equal(int(parse_of(p)), int(parse_error::bad_checksum));
    for (parse_error e : {parse_error::truncated, parse_error::bad_checksum}) {
        assert_true(parse_error_name(e).size() > 3);
    }
}

// A dtype or op byte outside loom.h's enums is refused before it becomes an enum value
// (undefined behaviour), for the kinds whose payload is elements and for every other kind.
void out_of_range_dtype_and_op_bytes_are_refused(void**) {
    header ack  = sample(LOOM_FLOAT32, 0);
    ack.kind    = packet_kind::ack;
    header join = ack;
    join.kind   = packet_kind::join;
    for (const header& h : {sample(LOOM_FLOAT32, 16), ack, join}) {
        for (uint8_t byte : {uint8_t(LOOM_DTYPE_COUNT), uint8_t(200), uint8_t(255)}) {
            auto p                          = packet_of(h);
            p[offsetof(wire_header, dtype)] = byte;
            reseal(p);
            assert_int_equal(int(parse_of(p)), int(parse_error::bad_dtype));
        }
        for (uint8_t byte : {uint8_t(LOOM_OP_COUNT), uint8_t(77), uint8_t(255)}) {
            auto p                       = packet_of(h);
            p[offsetof(wire_header, op)] = byte;
            reseal(p);
            assert_int_equal(int(parse_of(p)), int(parse_error::bad_op));
        }
    }
}

}  // namespace

LOOM_TEST_MAIN("inc_packet", cmocka_unit_test(crc32c_check_value),
               cmocka_unit_test(round_trip_every_dtype_and_kind),
               cmocka_unit_test(header_is_big_endian_at_its_offsets),
               cmocka_unit_test(malformed_packets_are_refused_with_their_reason),
               cmocka_unit_test(out_of_range_dtype_and_op_bytes_are_refused))
