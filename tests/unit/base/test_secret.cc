// SPDX-License-Identifier: Apache-2.0
// runtime/base/secret: SHA-256 and HMAC-SHA-256 against the published test vectors
// (FIPS 180-4 examples, RFC 4231 cases 1, 2, 6), constant-time equality, hex, and secrets.
#include <cstring>
#include <string>

#include "base/secret.hh"
#include "test_main.hh"

using namespace loom;

static std::string hex_of(const digest256& d) {
    return to_hex(d);
}

static void sha256_matches_the_standard_examples(void**) {
    assert_string_equal(hex_of(sha256({})).c_str(),
                        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    std::string abc = "abc";
    assert_string_equal(
        hex_of(sha256(std::span(reinterpret_cast<const uint8_t*>(abc.data()), abc.size()))).c_str(),
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    // Two blocks: the padding crosses a block boundary.
    std::string two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    assert_string_equal(
        hex_of(sha256(std::span(reinterpret_cast<const uint8_t*>(two.data()), two.size()))).c_str(),
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

static void hmac_matches_rfc4231(void**) {
    std::string key1(20, '\x0b');
    assert_string_equal(hex_of(hmac_sha256(key1, "Hi There")).c_str(),
                        "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
    assert_string_equal(hex_of(hmac_sha256("Jefe", "what do ya want for nothing?")).c_str(),
                        "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
    // A key longer than the block is hashed first.
    std::string key6(131, '\xaa');
    assert_string_equal(
        hex_of(hmac_sha256(key6, "Test Using Larger Than Block-Size Key - Hash Key First")).c_str(),
        "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
}

static void equality_and_hex(void**) {
    uint8_t a[4] = {1, 2, 3, 4}, b[4] = {1, 2, 3, 5};
    assert_true(equal_constant_time(a, a));
    assert_false(equal_constant_time(a, b));
    assert_false(equal_constant_time(std::span(a, 3), std::span(a, 4)));
    std::string bytes;
    assert_true(from_hex("00ff7Aa0", &bytes));
    assert_int_equal(bytes.size(), 4);
    assert_int_equal(uint8_t(bytes[1]), 0xff);
    assert_int_equal(uint8_t(bytes[2]), 0x7a);
    assert_false(from_hex("abc", &bytes));
    assert_false(from_hex("zz", &bytes));
    assert_string_equal(to_hex(std::span(a, 2)).c_str(), "0102");
}

static void secrets_are_fresh(void**) {
    auto s1 = random_secret_hex(), s2 = random_secret_hex();
    assert_true(s1.is_ok() && s2.is_ok());
    assert_int_equal(s1->size(), 64);
    assert_string_not_equal(s1->c_str(), s2->c_str());
}

LOOM_TEST_MAIN("base_secret", cmocka_unit_test(sha256_matches_the_standard_examples),
               cmocka_unit_test(hmac_matches_rfc4231), cmocka_unit_test(equality_and_hex),
               cmocka_unit_test(secrets_are_fresh))
