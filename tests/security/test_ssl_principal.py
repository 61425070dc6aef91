import pytest

from wirekafka.security.ssl_principal import PrincipalMapper, rfc2253_name

SUBJECT = (
    (("countryName", "US"),),
    (("organizationName", "Example, Inc."),),
    (("organizationalUnitName", "ServiceUsers"),),
    (("commonName", "alice"),),
)


def test_a_subject_is_written_most_specific_part_first_with_rfc2253_escapes():
    assert rfc2253_name(SUBJECT) == "CN=alice,OU=ServiceUsers,O=Example\\, Inc.,C=US"


def test_multi_valued_and_keywordless_attributes():
    subject = ((("commonName", "a"), ("userId", "7")), (("emailAddress", "a@x.io"),))
    # Java writes the e-mail attribute by its OID, with the DER of its IA5String
    assert rfc2253_name(subject) == "1.2.840.113549.1.9.1=#1606614078" + "2e696f,CN=a+UID=7"


def test_leading_hash_and_edge_spaces_are_escaped():
    assert rfc2253_name(((("commonName", "#x "),),)) == "CN=\\#x\\ "


@pytest.mark.parametrize(
    ("rules", "name"),
    [
        ("DEFAULT", "CN=alice,OU=ServiceUsers,O=Example,C=US"),
        ("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,DEFAULT", "alice"),
        ("RULE:^CN=(.*?),OU=(.*?),O=(.*?),C=(.*?)$/$1@$2/U", "ALICE@SERVICEUSERS"),
        ("RULE:^CN=(.*?),OU=Other.*$/$1/L, DEFAULT", "CN=alice,OU=ServiceUsers,O=Example,C=US"),
        ("RULE:^CN=bob.*$/bob/", "CN=alice,OU=ServiceUsers,O=Example,C=US"),  # no rule: as is
    ],
)
def test_mapping_rules_apply_the_first_that_matches(rules, name):
    assert PrincipalMapper(rules).name_of("CN=alice,OU=ServiceUsers,O=Example,C=US") == name


@pytest.mark.parametrize("rules", ["RULE:^CN=(.*$/$1/", "SOMETHING", "RULE:x/y/Q"])
def test_a_bad_rule_is_an_error_naming_it(rules):
    with pytest.raises(ValueError):
        PrincipalMapper(rules)
