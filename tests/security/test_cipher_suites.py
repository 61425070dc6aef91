import ssl

import pytest

from wirekafka.security.cipher_suites import TLS12_SUITE_CODES, TLS13_SUITES, cipher_choice


def test_every_iana_name_in_the_table_is_the_openssl_suite_of_its_code():
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.set_ciphers("ALL:@SECLEVEL=0")
    by_code = {c["id"] & 0xFFFF: c["name"] for c in context.get_ciphers()}
    for name, code in TLS12_SUITE_CODES.items():
        assert cipher_choice([name]).tls12_openssl == (by_code[code],), name
    assert cipher_choice(["TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384"]).tls12_openssl == (
        "ECDHE-RSA-AES256-GCM-SHA384",
    )


def test_openssl_names_pass_through_and_tls13_is_all_or_nothing():
    only_12 = cipher_choice(["ECDHE-RSA-AES128-GCM-SHA256"])
    assert (only_12.tls12_openssl, only_12.tls13) == (("ECDHE-RSA-AES128-GCM-SHA256",), False)
    only_13 = cipher_choice(sorted(TLS13_SUITES))
    assert (only_13.tls12_openssl, only_13.tls13) == ((), True)
    with pytest.raises(ValueError, match="cannot narrow"):
        cipher_choice(["TLS_AES_128_GCM_SHA256"])


@pytest.mark.parametrize("name", ["TLS_RSA_WITH_RC4_128_SHA", "NOT-A-SUITE", "TLS_FANCY"])
def test_an_unknown_suite_is_named(name):
    with pytest.raises(ValueError, match=name):
        cipher_choice([name])
