"""Only names that can exist: under a known public suffix, or under LOCAL_SUFFIXES."""

from __future__ import annotations

import pytest

from crawler.core.config import SettingError
from crawler.core.denylist import NO_FOLLOW, DenyList
from crawler.core.hostnames import (
    SINGLE_LABEL,
    SPECIAL_USE,
    UNKNOWN_TLD,
    HostnameError,
    entry_name_refusal,
    local_suffixes,
    name_refusal,
    normalize_entry,
    seed_refusal,
)
from crawler.core.links import NO_HOSTNAME, filter_found

NONE: frozenset[str] = frozenset()
TEST = frozenset({"test"})

# hostname → (refusal without local suffixes, refusal with LOCAL_SUFFIXES=test)
NAMES = [
    ("www.example.com", None, None),
    ("example.co.uk", None, None),
    ("user.github.io", None, None),  # the list's private section
    ("xn--n3h.net", None, None),
    ("93.184.216.34", None, None),
    ("2606:4700::1111", None, None),
    ("3pp", SINGLE_LABEL, SINGLE_LABEL),
    ("com", SINGLE_LABEL, SINGLE_LABEL),
    ("intranet", SINGLE_LABEL, SINGLE_LABEL),
    ("x.comundefined", UNKNOWN_TLD, UNKNOWN_TLD),
    ("www.site.bogus", UNKNOWN_TLD, UNKNOWN_TLD),
    ("printer.local", SPECIAL_USE, SPECIAL_USE),
    ("localhost", SPECIAL_USE, SPECIAL_USE),
    ("app.localhost", SPECIAL_USE, SPECIAL_USE),
    ("www.example", SPECIAL_USE, SPECIAL_USE),
    ("x.invalid", SPECIAL_USE, SPECIAL_USE),
    ("abc.onion", SPECIAL_USE, SPECIAL_USE),  # .onion is in the list: special-use first
    ("x.alt", SPECIAL_USE, SPECIAL_USE),
    ("db.internal", SPECIAL_USE, SPECIAL_USE),
    ("nas.home.arpa", SPECIAL_USE, SPECIAL_USE),  # arpa is in the list
    ("x.arpa", None, None),
    ("a.b.test", SPECIAL_USE, None),
    ("test", SPECIAL_USE, None),
    ("test.com", None, None),
    ("x.testing", UNKNOWN_TLD, UNKNOWN_TLD),  # not under .test, label by label
]


@pytest.mark.parametrize(("hostname", "without", "with_test"), NAMES)
def test_a_name_can_exist_or_is_refused_by_its_reason(hostname, without, with_test):
    assert name_refusal(hostname, NONE) == without
    assert name_refusal(hostname, TEST) == with_test


def test_the_process_reads_local_suffixes_from_its_environment(monkeypatch):
    monkeypatch.setenv("LOCAL_SUFFIXES", "")
    assert name_refusal("a.test") == SPECIAL_USE
    monkeypatch.setenv("LOCAL_SUFFIXES", " .Corp.Example, test ,lan")
    assert local_suffixes() == {"corp.example", "test", "lan"}
    assert name_refusal("a.test") is None and name_refusal("nas.lan") is None
    assert name_refusal("wiki.corp.example") is None
    assert name_refusal("www.example") == SPECIAL_USE


def test_a_bad_local_suffix_names_the_setting():
    with pytest.raises(SettingError, match="LOCAL_SUFFIXES='ok, bad..name'"):
        local_suffixes("ok, bad..name")


PAGE_LINKS = [
    ("https://kept.example.com/", "a href"),
    ("https://3pp/", "a href"),
    ("//x.comundefined/", "inline script"),
    ("https://printer.local/", "img src"),
    ("http://localhost:8080/", "inline json"),
    ("https://a.test/", "a href"),
    ("https://ads.example.net/", "script src"),
    ("mailto:x@example.com", "a href"),
]


@pytest.mark.parametrize(
    ("local", "saved", "dropped"),
    [
        (NONE, {"kept.example.com"}, {SPECIAL_USE: 3, SINGLE_LABEL: 1, UNKNOWN_TLD: 1}),
        (TEST, {"kept.example.com", "a.test"}, {SPECIAL_USE: 2, SINGLE_LABEL: 1, UNKNOWN_TLD: 1}),
    ],
)
def test_the_link_filter_saves_only_names_that_can_exist(local, saved, dropped):
    denylist = DenyList()
    denylist.add("example.net", NO_FOLLOW)
    links = filter_found(PAGE_LINKS, "page.example.org", denylist, local=local)
    assert links.hostnames == saved
    assert links.dropped == {**dropped, NO_FOLLOW: 1, NO_HOSTNAME: 1}
    assert links.found == len(PAGE_LINKS)


# hostname, force → words of the seed's and the entry's refusal (None: taken)
ENTRIES = [
    ("printer.local", False, "'local' is a special-use name"),
    ("localhost.example.com", False, None),
    ("x.comundefined", False, "'comundefined' is no top-level domain"),
    ("x.comundefined", True, "'comundefined' is no top-level domain"),
    ("intranet", True, "a single label"),
    ("nas.home.arpa", False, "'home.arpa' is a special-use name"),
    ("com", True, None),  # a bare suffix of the list: the force rule's business
    ("co.uk", True, None),
    ("x.trap.test", False, None),  # LOCAL_SUFFIXES=test in the tests' environment
]


@pytest.mark.parametrize(("hostname", "force", "words"), ENTRIES)
def test_seeds_and_deny_entries_follow_the_same_rule_with_their_own_words(hostname, force, words):
    seed = seed_refusal(hostname, force=force)
    if words is None:
        assert seed is None
        assert normalize_entry(hostname, force=force) == hostname
        return
    assert words in seed and "LOCAL_SUFFIXES" in seed and "no host on the web" in seed
    with pytest.raises(HostnameError, match="it would deny nothing") as refused:
        normalize_entry(hostname, force=force)
    assert words in str(refused.value)


def test_an_entry_under_a_local_suffix_is_taken_only_with_it():
    assert entry_name_refusal("nas.lan", frozenset({"lan"})) is None
    assert "'lan' is no top-level domain" in entry_name_refusal("nas.lan", NONE)
