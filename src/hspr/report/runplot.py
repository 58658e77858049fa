"""The picture of one run: estimate and 90 % band against tasks run (issue 12, item 4).

The same figure serves a live session (``hspr live plot``) and a replay target
(``hspr live plot --target AGENT``, which also draws the target's true score).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from types import MappingProxyType

import numpy as np

from ..fileio import readable_name

#: matplotlib settings under which figures are drawn: text is never parsed as math (ids, file
#: names and labels reach titles and legends; 'a$^{$b' raised a mathtext error, '$x$' became math)
PLAIN_TEXT = MappingProxyType({"text.parse_math": False})


def figure_run(path: Sequence[dict], title: str, stop_width_pp: float | None = None, truth: float | None = None,
               budget: int | None = None):
    """Estimate (line) and 90 % interval (band) in pp against the number of tasks run.

    Parameters
    ----------
    path : list of dict
        :func:`hspr.session.trajectory` output (``n``, ``point``, ``lower``, ``upper`` on the 0-1 scale).
    title : str
    stop_width_pp : float, optional
        Drawn as a second panel: the interval width against the stop width.
    truth : float, optional
        The full score (0-1), for a replay target.
    budget : int, optional
        Marked on the x axis.

    Returns
    -------
    matplotlib.figure.Figure
    """
    import matplotlib

    with matplotlib.rc_context(PLAIN_TEXT):  # every text is created plain: a '$' in an id is not math
        return _figure_run(path, title, stop_width_pp, truth, budget)


def _figure_run(path, title, stop_width_pp, truth, budget):
    from matplotlib.figure import Figure

    n = np.array([p["n"] for p in path], float)
    pt = 100 * np.array([p["point"] for p in path], float)
    has = all(p["lower"] is not None for p in path)
    fig = Figure(figsize=(7.0, 4.6 if stop_width_pp is None else 6.2))
    axes = fig.subplots(2 if stop_width_pp is not None else 1, 1, sharex=True, squeeze=False,
                        gridspec_kw={"height_ratios": [3, 1.3]} if stop_width_pp is not None else None)[:, 0]
    ax = axes[0]
    if has:
        lo = 100 * np.array([p["lower"] for p in path], float)
        hi = 100 * np.array([p["upper"] for p in path], float)
        ax.fill_between(n, lo, hi, step="post", alpha=0.25, color="C0", label="90 % interval")
    # the final value goes in the legend, which matplotlib places where it covers the least data
    # to 2 decimals, as `hspr live status` prints them (a new-user trial: 9.7 pp here, 9.75 there, at a stop width of 10)
    final = (f" (now {pt[-1]:.2f} %" + (f" [{lo[-1]:.2f}, {hi[-1]:.2f}]" if has else "") + ")") if len(pt) else ""
    ax.step(n, pt, where="post", color="C0", lw=1.6, label=f"estimate{final}")
    if len(pt):  # the band steps after each task, so the last interval is drawn at its point
        yerr = [[pt[-1] - lo[-1]], [hi[-1] - pt[-1]]] if has else None
        ax.errorbar(n[-1], pt[-1], yerr=yerr, fmt="o", color="C0", capsize=3, lw=1.4)
    if truth is not None:
        ax.axhline(100 * truth, color="C3", ls="--", lw=1.2, label=f"true score {100 * truth:.2f} %")
    if budget is not None:
        for a in axes:
            a.axvline(budget, color="0.5", ls=":", lw=1)
        ax.annotate(f"budget {budget}", (budget, 1), xycoords=("data", "axes fraction"), xytext=(-3, -12),
                    textcoords="offset points", ha="right", fontsize=8, color="0.4")
    ax.set_ylabel("full score (%)")
    ax.set_title(readable_name(title), fontsize=10)  # a session or bank named by a file name that is no UTF-8 (a trial)
    ax.legend(loc="best", fontsize=8, frameon=False)
    ax.grid(alpha=0.3)
    if stop_width_pp is not None:
        w = axes[1]
        if has:
            w.step(n, hi - lo, where="post", color="C0", lw=1.4, label=f"interval width (now {hi[-1] - lo[-1]:.2f} pp)")
            # the last width as a point, as the last interval above: a step line ends where the last value begins, so
            # the width that stopped the session was not drawn (a hostile trial: the line ended above the stop width)
            w.plot(n[-1:], (hi - lo)[-1:], "o", color="C0")
        w.axhline(stop_width_pp, color="C2", ls="--", lw=1.2, label=f"stop width {stop_width_pp:g} pp")
        w.set_ylim(bottom=0)
        w.set_ylabel("width (pp)")
        w.legend(loc="best", fontsize=8, frameon=False)
        w.grid(alpha=0.3)
    axes[-1].set_xlabel("tasks run")
    from matplotlib.ticker import MaxNLocator

    axes[-1].xaxis.set_major_locator(MaxNLocator(integer=True))  # a count of tasks: no 2.5
    fig.tight_layout()
    return fig


def is_figure_file(path: str | Path) -> bool:
    """Whether the existing file ``path`` holds a figure that hspr may replace: a whole figure of its suffix's
    kind, so that writing a figure there replaces a figure, not a user's text file named ``notes.png`` (a hostile
    trial), and drawn by hspr as far as the file tells, not a screenshot or a drawing of one's own (a later hostile
    trial and its re-trials). A PNG must be laid out as hspr's are (:func:`_png_is_hspr`). An SVG must open
    with its ``<svg>`` element (after an XML declaration, comments and a doctype) whose first child is its
    ``<metadata>`` with no date, naming as its creator exactly ``hspr`` or matplotlib (``Matplotlib v3.9.2,
    https://matplotlib.org/``; a matplotlib SVG saved with its defaults carries a date). hspr's figures name it
    (:data:`FIGURE_METADATA`); those written before they did name no program (PNG) or matplotlib (SVG), and
    pass. Files above 64 MiB are no figure of hspr's. An empty file counts as one."""
    path = Path(path)
    with open(path, "rb") as fh:
        data = fh.read(_MAX_FIGURE + 1)
    if not data:
        return True
    ext = path.suffix.lower()
    if len(data) > _MAX_FIGURE or ext not in (".png", ".svg"):
        return False
    if ext == ".png":
        return _png_is_hspr(data)
    start = _SVG_START.match(data)  # the first element is <svg>, after a declaration, comments and a doctype
    if start is None:
        return False
    creator = _SVG_CREATOR.match(data, start.end())
    return creator is not None and re.fullmatch(rb"hspr|Matplotlib v[0-9][^,<]*, https://matplotlib\.org/",
                                                creator.group(1)) is not None


#: the metadata of every figure hspr writes, by format: no date (the same run gives the same file) and the
#: program's name, by which :func:`is_figure_file` tells hspr's figures from a user's
FIGURE_METADATA = MappingProxyType({"png": MappingProxyType({"Software": "hspr"}),
                                    "svg": MappingProxyType({"Date": None, "Creator": "hspr"})})
#: the largest file :func:`is_figure_file` reads as a figure (hspr's are well below 1 MiB)
_MAX_FIGURE = 64 << 20


def _png_is_hspr(data: bytes) -> bool:
    """Whether PNG bytes ``data`` are a whole PNG laid out as hspr's figures are (matplotlib's Agg writer at 150
    dpi): 8-bit RGBA, a ``pHYs`` chunk of 150 dpi, image data, ``IEND`` at the very end, and no other ancillary
    chunk than a ``Software`` tEXt that reads exactly ``hspr`` (figures from before hspr named itself have
    none). A screenshot (another resolution, EXIF, XMP, text of its own), an image of another program or a cut
    file is not (a re-trial: each of those passed a test of the ``Software`` text alone)."""
    if not data.startswith(b"\x89PNG\r\n\x1a\n"):
        return False
    pos, kinds = 8, []
    while pos + 12 <= len(data):
        length, kind = int.from_bytes(data[pos:pos + 4], "big"), data[pos + 4:pos + 8]
        body = data[pos + 8:pos + 8 + length]
        if pos + 12 + length > len(data):
            return False
        kinds.append(kind)
        if kind == b"IHDR" and body[8:10] != b"\x08\x06":  # bit depth 8, colour type 6 (RGBA)
            return False
        if kind == b"pHYs" and body != (5906).to_bytes(4, "big") * 2 + b"\x01":  # 150 dpi in pixels per metre
            return False
        if kind == b"tEXt" and body != b"Software\0hspr":
            return False
        if kind not in (b"IHDR", b"pHYs", b"IDAT", b"IEND", b"tEXt"):
            return False
        pos += 12 + length
        if kind == b"IEND":
            break
    return (pos == len(data) and kinds[:1] == [b"IHDR"] and kinds[-1:] == [b"IEND"] and b"pHYs" in kinds
            and b"IDAT" in kinds and kinds.count(b"tEXt") <= 1)


_SVG_START = re.compile(rb"(?:\xef\xbb\xbf)?\s*(?:<\?xml[^>]*\?>\s*)?(?:(?:<!--.*?-->|<!doctype[^>]*>)\s*)*<svg[\s>]",
                        re.I | re.S)
#: the first child of the <svg> element, as matplotlib writes it: <metadata> with the creator's name
_SVG_CREATOR = re.compile(rb"[^>]*>\s*<metadata>\s*<rdf:RDF[^>]*>\s*<cc:Work>\s*(?:<dc:type[^>]*/>\s*|"
                          rb"<dc:format>[^<]*</dc:format>\s*)*<dc:creator>\s*<cc:Agent>\s*<dc:title>([^<]*)</dc:title>", re.S)


def figure_format(path: str | Path) -> str:
    """'png' or 'svg', the format :func:`save_figure` writes ``path`` in, by its suffix (any case).

    Raises ValueError for another suffix (asked before a long step too: a trial's `hspr live plot
    --out /dev/zero` was refused after a 69 s fit)."""
    ext = Path(path).suffix.lower().lstrip(".")
    if ext not in ("png", "svg"):
        raise ValueError(f"{path}: the figure is written as .png or .svg; give a file name ending in one of them")
    return ext


def save_figure(fig, path: str | Path) -> Path:
    """Write ``fig`` to ``path`` (PNG or SVG by its suffix, without timestamps, so the same run gives the same file).

    Raises ValueError for a suffix other than .png or .svg."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    path = Path(path)
    ext = figure_format(path)
    FigureCanvasAgg(fig)
    path.parent.mkdir(parents=True, exist_ok=True)
    import io

    import matplotlib

    from ..fileio import write_bytes_durable

    buf = io.BytesIO()
    with matplotlib.rc_context({"svg.hashsalt": "hspr-run"}):
        fig.savefig(buf, format=ext, dpi=150, bbox_inches="tight",
                    metadata=dict(FIGURE_METADATA[ext]))
    write_bytes_durable(buf.getvalue(), path)  # a full disk leaves no empty or half-written figure
    return path
