"""The content fingerprint ignores what a build or a request fills anew (issue 20).

``test_pagedates`` covers the masked tokens (times, counters in text, ids); here, whole
blocks: related, recommended and random posts named by their class, id or heading,
counters and rotating widgets. Each case renders one page twice with a different block and
asserts the same fingerprint, and the counterpart: a change to the article's own text is
still seen with the block present. The hugo-theme-iris box is the real case of
bench/realweb/RESULTS.md, section 3.
"""

from __future__ import annotations

import pytest

from sitemapcrawl.verify.fingerprint import content_fingerprint

ARTICLE = (
    "<p>Static sites are built from plain text files and published as HTML. {edit} This "
    "paragraph is the article's own content and long enough to be the main text.</p>"
)

#: (name, page template with {article} and {block}, two renderings of the block)
NOISE: list[tuple[str, str, str, str]] = [
    (
        "hugo-iris random recommended box, outside any article",
        "<body><section class='hero'><div class='column'>{article}"
        "<section class='section'>{block}</section></div></section></body>",
        "<h2 class='title is-3'>Random Recommended Posts</h2><a href='/posts/math/'>"
        "<div class='card'><p>MathJax Support</p><p>2020-01-01</p></div></a>",
        "<h2 class='title is-3'>Random Recommended Posts</h2><a href='/posts/mermaid/'>"
        "<div class='card'><p>Mermaid diagrams</p><p>2019-12-30</p></div></a>",
    ),
    (
        "heading inside the article, the block runs to the next heading",
        "<main><article><h1>Title</h1>{article}{block}<h2>Comments policy</h2>"
        "<p>Be kind.</p></article></main>",
        "<h2>You may also like</h2><ul><li><a href='/a'>Post A</a></li></ul>",
        "<h2>You may also like</h2><ul><li><a href='/b'>Post B</a></li>"
        "<li><a href='/c'>Post C</a></li></ul>",
    ),
    (
        "Japanese heading",
        "<main>{article}<div>{block}</div></main>",
        "<h3>関連記事</h3><a href='/a'>記事A</a>",
        "<h3>関連記事</h3><a href='/b'>記事B</a>",
    ),
    (
        "class names a related-posts widget",
        "<main>{article}{block}</main>",
        "<div class='post-related-list'><a href='/a'>A</a></div>",
        "<div class='post-related-list'><a href='/b'>B</a></div>",
    ),
    (
        "Jetpack related posts by id",
        "<main>{article}{block}</main>",
        "<div id='jp-relatedposts'><p>Similar post one</p></div>",
        "<div id='jp-relatedposts'><p>Other post two</p></div>",
    ),
    (
        "a bare page-view counter",
        "<main>{article}<p>Read {block} times</p></main>",
        "<span class='post-view-count'>1204</span>",
        "<span class='post-view-count'>98311</span>",
    ),
    (
        "busuanzi counter of Hexo themes",
        "<main>{article}{block}</main>",
        "<span id='busuanzi_container_page_pv'>Visits 31</span>",
        "<span id='busuanzi_container_page_pv'>Visits 4410</span>",
    ),
    (
        "rotating widget",
        "<main>{article}{block}</main>",
        "<div class='widget widget_quote'>Quote of the day: carpe diem</div>",
        "<div class='widget widget_quote'>Quote of the day: festina lente</div>",
    ),
    (
        "carousel",
        "<main>{article}{block}</main>",
        "<div class='carousel-inner'>Slide about cats</div>",
        "<div class='carousel-inner'>Slide about dogs</div>",
    ),
]


@pytest.mark.parametrize(("name", "template", "one", "two"), NOISE, ids=[n[0] for n in NOISE])
def test_blocks_filled_anew_on_every_render_are_ignored(
    name: str, template: str, one: str, two: str
) -> None:
    article = ARTICLE.format(edit="")
    first = content_fingerprint(template.format(article=article, block=one))
    second = content_fingerprint(template.format(article=article, block=two))
    assert first == second
    # the fingerprint is of the article's text, the block left out
    assert first == content_fingerprint(template.format(article=article, block=""))


@pytest.mark.parametrize(("name", "template", "one", "two"), NOISE, ids=[n[0] for n in NOISE])
def test_an_edit_to_the_article_is_seen_next_to_the_block(
    name: str, template: str, one: str, two: str
) -> None:
    before = template.format(article=ARTICLE.format(edit=""), block=one)
    after = template.format(article=ARTICLE.format(edit="A sentence was added."), block=two)
    assert content_fingerprint(before)[0] != content_fingerprint(after)[0]


@pytest.mark.parametrize(
    ("template", "one", "two"),
    [
        # an academic post's own section, whatever its first word
        (
            "<main>{article}<h2>Related work</h2><p>{block}</p></main>",
            "Smith (2019) built the first one.",
            "Jones (2021) built the first one.",
        ),
        # a home page's recent posts are its content
        (
            "<main>{article}<section><h2>Recent posts</h2>{block}</section></main>",
            "<a href='/a'>Post A</a>",
            "<a href='/b'>Post B</a>",
        ),
        # a heading that only starts like a box's is content
        (
            "<main>{article}<section><h2>{block}</h2><p>Text.</p></section></main>",
            "Related posts are a bad idea for small blogs",
            "Related posts are a good idea for small blogs",
        ),
        # highlighted code: its spans are named after token kinds, never page furniture
        (
            '<main>{article}<pre><code class="language-py"><span class="comment">{block}'
            "</span>\nx = 1</code></pre></main>",
            "# keep the cache warm",
            "# drop the cache first",
        ),
        (  # Prism's tokens, in inline code
            '<main>{article}<p>Call <code class="language-js"><span class="token comment">'
            "{block}</span></code> first.</p></main>",
            "// retry twice",
            "// retry three times",
        ),
    ],
    ids=[
        "related-work-section",
        "home-page-recent-posts",
        "long-heading",
        "code-comment",
        "prism-inline-code-comment",
    ],
)
def test_content_that_looks_like_a_box_is_kept(template: str, one: str, two: str) -> None:
    article = ARTICLE.format(edit="")
    first = content_fingerprint(template.format(article=article, block=one))[0]
    second = content_fingerprint(template.format(article=article, block=two))[0]
    assert first != second
