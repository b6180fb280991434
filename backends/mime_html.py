"""HTML parts as text: text the HTML hides marked, html2text's rendering, links only the HTML
shows, and the layout a browser gives the text (for armor read out of HTML).

Moved out of :mod:`backends.mime` (issue 36). Nothing remote is ever fetched: html2text only
rewrites markup.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from mailtriage.backends.mime_header_text import decode_bytes
from mailtriage.backends.mime_headers import _Later
from mailtriage.backends.mime_parts import _payload_bytes, _strip_cr
from mailtriage.core.lazy_re import lazy

if TYPE_CHECKING:
    from email.message import EmailMessage


# ---------------------------------------------------------------------------
# HTML
# ---------------------------------------------------------------------------


# Inline styles that hide text from the reader while a filter (or a model) still sees it.
_HIDDEN_STYLE = _Later(
    r"display\s*:\s*none|visibility\s*:\s*hidden|font-size\s*:\s*0*(?:\.0+)?(?:px|pt|em|rem|%)?\s*(?:;|$|!)"
    r"|opacity\s*:\s*0(?:\.0+)?\s*(?:;|$)",
    re.IGNORECASE)
_WHITE_TEXT = _Later(r"(?<![-\w])color\s*:\s*(?:#fff(?:fff)?\b|white\b|rgba?\(\s*255\s*,\s*255\s*,\s*255)",
                         re.IGNORECASE)
_DARK_BACKGROUND = _Later(r"background(?:-color)?\s*:\s*(?!#fff|white|transparent|none)[#\w]", re.IGNORECASE)
_TAG = _Later(r"<(/?)([A-Za-z][A-Za-z0-9]*)((?:[^>\"']|\"[^\"]*\"|'[^']*')*)>")
_STYLE_ATTR = _Later(r"""\bstyle\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+))""", re.IGNORECASE)
_FONT_WHITE = _Later(r"""\bcolor\s*=\s*["']?\s*(?:#fff(?:fff)?|white)\b""", re.IGNORECASE)
_VOID_TAGS = frozenset(("br", "img", "hr", "meta", "link", "input", "col", "area", "base", "wbr", "source"))
HIDDEN_OPEN, HIDDEN_CLOSE = "[hidden text: ", "]"


def _is_hidden(tag: str, attrs: str) -> bool:
    match = _STYLE_ATTR().search(attrs)
    style = next((g for g in match.groups() if g is not None), "") if match else ""
    if style and _HIDDEN_STYLE().search(style):
        return True
    # White text is hidden on the usual white page, not on a background it sets itself.
    if style and _WHITE_TEXT().search(style) and not _DARK_BACKGROUND().search(style):
        return True
    if re.search(r"(?:^|\s)hidden(?:\s|=|$)", attrs, re.IGNORECASE):
        return True
    return tag == "font" and _FONT_WHITE().search(attrs) is not None


def _mark_hidden(html: str) -> tuple[str, int]:
    """Wrap the text of elements hidden by their style in visible markers; count them."""
    if "<" not in html:
        return html, 0
    out: list[str] = []
    position = 0
    stack: list[tuple[str, bool]] = []
    hidden_depth = 0
    count = 0
    for match in _TAG().finditer(html):
        closing, tag, attrs = match.group(1), match.group(2).lower(), match.group(3)
        if tag in ("style", "script", "head", "title"):
            continue
        if not closing:
            if tag in _VOID_TAGS or attrs.rstrip().endswith("/"):
                continue
            hidden = hidden_depth == 0 and _is_hidden(tag, attrs)
            stack.append((tag, hidden))
            if hidden:
                hidden_depth += 1
                count += 1
                out.append(html[position:match.end()])
                out.append(HIDDEN_OPEN)
                position = match.end()
            continue
        # A closing tag closes the nearest open element of that name (and any left open inside it).
        for depth in range(len(stack) - 1, -1, -1):
            if stack[depth][0] == tag:
                closed = stack[depth:]
                del stack[depth:]
                if any(h for _, h in closed):
                    hidden_depth = 0
                    out.append(html[position:match.start()])
                    out.append(HIDDEN_CLOSE)
                    position = match.start()
                break
    out.append(html[position:])
    if hidden_depth:
        out.append(HIDDEN_CLOSE)
    return "".join(out), count


def _html_to_text(html: str) -> tuple[str, str | None]:
    """HTML to readable text. html2text only rewrites markup; nothing is fetched.

    Text the HTML hides from its reader (display:none, zero-size fonts, white text,
    ...) is kept and wrapped in ``[hidden text: ...]`` with a note: it is what a
    lure hides from a person and shows to a filter.
    """
    notes = []
    try:
        html, hidden = _mark_hidden(html)
    except Exception:  # noqa: BLE001 - marking is best effort; the text itself must not be lost
        hidden = 0
    if hidden:
        notes.append(f"the HTML hides text from its reader ({hidden} element{'s' if hidden > 1 else ''}: "
                     "display:none, zero-size, white or invisible); shown marked [hidden text: ...]")
    try:
        # Lazy: html2text costs about 50 ms to import and only HTML-only mail needs it.
        import html2text
    except ImportError:  # pragma: no cover - a declared dependency
        notes.append("html2text is not installed; tags stripped")
        return re.sub(r"<[^>]+>", "", html), "; ".join(notes)
    converter = html2text.HTML2Text()
    converter.body_width = 0
    converter.ignore_images = False  # keep alt text and the target visible, never load it
    converter.images_to_alt = True
    converter.unicode_snob = True
    try:
        return converter.handle(html).strip("\n") + "\n", "; ".join(notes) or None
    except Exception as exc:  # noqa: BLE001 - hostile HTML must not lose the message
        notes.append(f"HTML could not be converted ({exc}); tags stripped")
        return re.sub(r"<[^>]+>", "", html), "; ".join(notes)


_HREF = _Later(r"""\bhref\s*=\s*(?:"([^"<>]*)"|'([^'<>]*)'|([^\s>"']+))""", re.IGNORECASE)


def _html_only_links(html_part: EmailMessage, plain_text: str) -> list[str]:
    """Link targets of an HTML alternative that its text/plain sibling does not show."""
    try:
        data, _ = _payload_bytes(html_part)
        label = html_part.get_param("charset")
        html, _ = decode_bytes(data, label if isinstance(label, str) else None)
    except Exception:  # noqa: BLE001 - a comparison only; never lose the message over it
        return []
    plain = " ".join(plain_text.split())
    links = []
    for match in _HREF().finditer(html):
        target = next(g for g in match.groups() if g is not None).strip()
        if not target or target.startswith("#") or target.lower().startswith("mailto:"):
            continue
        from html import unescape  # links of an HTML part only; html.entities costs ~1 ms at import

        target = unescape(target)
        if target not in plain and target.rstrip("/") not in plain and target not in links:
            links.append(target)
    return links


_HTML_DROPPED = _Later(r"<!--.*?(?:-->|$)|<(script|style|head|title)\b[^>]*>.*?(?:</\1\s*>|$)",
                       re.IGNORECASE | re.DOTALL)
_HTML_BLOCKS = frozenset(("address", "article", "blockquote", "body", "center", "dd", "div", "dl", "dt", "footer",
                          "h1", "h2", "h3", "h4", "h5", "h6", "header", "hr", "html", "li", "ol", "p", "pre",
                          "section", "table", "td", "th", "tr", "ul"))
_HTML_SPACE = lazy(r"[ \t\r\n\f]+")  # not \s: a non-breaking space is never collapsed


def html_armor_text(markup: str) -> str:
    """The text of HTML as a browser lays it out, for reading armor out of it: comments, scripts
    and styles dropped, whitespace collapsed (kept inside <pre>), <br> as a line end and a block
    element as the start of a new line, entities decoded, non-breaking spaces as spaces."""
    from html import unescape  # HTML holding armor only (see _html_only_links)

    out: list[str] = []

    def line_end() -> None:
        if out and not out[-1].endswith("\n"):
            out[-1] = out[-1].rstrip(" ")
            out.append("\n")

    def add(chunk: str, pre: bool) -> None:
        if not pre:
            chunk = _HTML_SPACE.sub(" ", chunk)
            if not out or out[-1].endswith("\n"):
                chunk = chunk.lstrip(" ")  # a browser shows no space at the start of a line
        if chunk:
            out.append(unescape(chunk).replace("\xa0", " "))

    markup = _HTML_DROPPED().sub("", _strip_cr(markup))
    pre = 0
    position = 0
    pre_opened = False
    for match in _TAG().finditer(markup):
        chunk = markup[position:match.start()]
        if pre_opened and chunk.startswith("\n"):
            chunk = chunk.split("\n", 1)[1]  # a browser does not show the line end right after <pre>
        add(chunk, pre > 0)
        position = match.end()
        closing, tag = match.group(1), match.group(2).lower()
        pre_opened = tag == "pre" and not closing
        if tag == "br":
            if out and not pre:
                out[-1] = out[-1].rstrip(" ")
            out.append("\n")
        elif tag in _HTML_BLOCKS:
            line_end()
        if tag == "pre":
            pre = max(0, pre - 1) if closing else pre + 1
    add(markup[position:], pre > 0)
    return "".join(out).strip("\n") + "\n"
