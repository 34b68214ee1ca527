"""bench/pagepairs' fixed rules on tiny inline inputs (no mirrors, no network)."""

from __future__ import annotations

from bench.pagepairs import methods, rules


def test_front_matter_dates_are_not_a_change() -> None:
    old = "---\ntitle: A\ndate: 2024-01-01\nlastmod: 2024-02-01\n---\nBody text.\n"
    new = "---\ntitle: A\ndate: 2024-01-01\nlastmod: 2024-06-30T10:00:00Z\n---\nBody  text.\n\n"
    assert not rules.source_changed(old, new)
    assert rules.source_changed(old, new.replace("Body", "New body"))
    assert rules.source_changed(old, new.replace("title: A", "title: B"))
    toml = '+++\ntitle = "A"\nupdated = "2024-01-01"\n+++\nx\n'
    assert not rules.source_changed(toml, toml.replace("2024-01-01", "2025-01-01"))
    assert rules.source_changed(None, toml)
    assert not rules.source_changed(None, None)


def test_url_to_source_mapping() -> None:
    sources = [
        "content/notes/go/_index.md",
        "content/notes/go/_index.bn.md",
        "content/posts/foo/index.md",
        "docs/user-guide/writing.md",
        "README.md",
        "themes/x/exampleSite/content/posts/foo.md",
        "content/a.md",
        "docs/a.md",
    ]
    keys = [
        rules.url_key(p)
        for p in (
            "notes/go/index.html",
            "bn/notes/go/",
            "posts/foo/index.html",
            "user-guide/writing/index.html",
            "index.html",
            "a.html",
        )
    ]
    got = rules.map_sources(keys, sources)
    assert got == {
        ("notes", "go"): "content/notes/go/_index.md",
        ("bn", "notes", "go"): "content/notes/go/_index.bn.md",
        ("posts", "foo"): "content/posts/foo/index.md",
        ("user-guide", "writing"): "docs/user-guide/writing.md",
    }  # the home page has no source; a.html has two at one depth


def test_page_must_show_its_source() -> None:
    src = "---\ntitle: t\n---\nThis paragraph is long enough to identify the page it renders.\n"
    page = rules.words(
        "<h1>t</h1> This paragraph is *long* enough to identify the page it renders."
    )
    assert rules.shows(page, src) is True
    assert rules.shows(rules.words("another page entirely"), src) is False
    assert rules.shows("anything", "---\na: b\n---\nshort\n") is None


def test_sampler_bounds_classes_deploys_and_urls() -> None:
    cands = [rules.Candidate(k, f"p{i}.html") for k in range(1, 6) for i in range(10)]
    order = rules.shuffled("site", cands)
    assert order == rules.shuffled("site", list(reversed(cands)))  # seeded, input order free
    s = rules.Sampler(per_class=4, per_deploy=3, per_url=1, max_examined=100)
    kept = [c for c in order if not s.full() and s.wants(c) and s.offer(c, c.k % 2 == 0)]
    assert sum(c.k % 2 == 0 for c in kept) == 4
    assert sum(c.k % 2 == 1 for c in kept) == 4
    assert max(sum(c.k == k for c in kept) for k in range(1, 6)) <= 3
    assert len({c.path for c in kept}) == len(kept)


def test_split_rule_and_template_lines() -> None:
    assert rules.half("peaceiris/hugo-theme-iris") in (rules.TUNING, rules.HELD_OUT)
    pages = [["Menu", "Tag (3)", f"post {i}"] for i in range(10)]
    assert methods.template_lines(pages, 0.2) == {"Menu", "Tag (3)"}
