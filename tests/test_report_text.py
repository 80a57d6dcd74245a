"""Text from claims, tables and configuration reaches the report, the HTML pages and the
terminal as data: shown verbatim, never evaluated (Jinja), never markup (reStructuredText,
HTML), never a control sequence (terminal)."""

from __future__ import annotations

import html
import re
from pathlib import Path

import jinja2
import pandas as pd
import pytest
from docutils.core import publish_parts

from galu.workflow import observations
from galu.workflow.claim_spec import parse_claims
from galu.workflow.claims import evaluate
from galu.workflow.claims_text import caption_reductions, caption_verdicts
from galu.workflow.cli import main
from galu.workflow.landing import landing_html, landing_page, run_summary
from galu.workflow.rst import jinja_raw, rst_escape, strip_raw
from galu.workflow.terminal import terminal_text


def hostile(marker: Path) -> list[str]:
    """Strings that were, or could become, code or markup; ``marker`` is the file the Jinja
    payloads would create if they ran."""
    run = f"cycler.__init__.__globals__.os.system('touch {marker}')"
    return [
        f"{{% endraw %}}{{{{ {run} }}}}{{% raw %}}",
        f"{{%- endraw -%}}{{{{ {run} }}}}{{%- raw -%}}",
        f"{{%endraw%}}{{% set x = {run} %}}",
        "{{F F^T}} and a literal {% raw %} and {# not a comment #}",
        "<script>alert('x')</script> & <b>bold</b>",
        ".. include:: /etc/hostname",
        "a line\n\n.. raw:: html\n\n   <i>injected</i>",
        "\\{% endraw %} after a backslash, `code`, *star*, |x|",
    ]


def shown(text: str) -> str:
    """What a reader sees of a hostile string: its lines joined by single spaces."""
    return re.sub(r"\s*\n\s*", " ", text)


def render(template: str) -> str:
    """As Snakemake renders a caption (snakemake/report/__init__.py): Jinja with its
    settings, then docutils with its defaults (raw and include enabled)."""
    env = jinja2.Environment(trim_blocks=True, lstrip_blocks=True)
    return publish_parts(env.from_string(template).render(), writer="html")["body"]


def text_of(page: str) -> str:
    """The visible text of an HTML fragment (tags dropped, entities decoded)."""
    return html.unescape(re.sub(r"<[^>]+>", "", page))


def table_with_statement(tmp_path: Path, statement: str, finding: str) -> pd.DataFrame:
    (tmp_path / "results").mkdir(exist_ok=True)
    pd.DataFrame({"y": [0.9]}).to_csv(tmp_path / "results/t.csv", index=False)
    entry = {"id": "c", "paper": "galu", "statement": statement, "figure": "figures/x.png",
             "source": "results/t.csv", "expression": "y", "reduce": "mean", "expected": 5,
             "finding": finding}  # fmt: skip
    return evaluate(parse_claims([entry], "quick"), tmp_path, "quick")


@pytest.mark.parametrize("index", range(8))
def test_hostile_claim_text_is_shown_verbatim_in_captions_and_pages(tmp_path, index):
    marker = tmp_path / "ran"
    text = hostile(marker)[index]
    table = table_with_statement(tmp_path, text, f"because {text}")
    reductions = [{"text": text, "claims": ["c"]}]
    caption = caption_verdicts(table, "figures/x.png") + caption_reductions("quick", reductions)
    page = landing_page(table, [], {"git": {}, "scale": "quick", "data": text})
    for rendered in (render(caption), render(page), landing_html(page)):
        assert not marker.exists()  # nothing ran
        assert 'class="system-message"' not in rendered and "<script" not in rendered
        assert "<i>injected</i>" not in rendered and "<b>bold" not in rendered
        assert shown(text) in text_of(rendered)
    assert shown(text) in text_of(render(caption)).split("Expected")[0]  # the statement
    assert f"because {shown(text)}" in text_of(render(caption))  # the finding


def test_a_hostile_table_cell_in_a_caption_sentence_is_shown_verbatim(tmp_path, monkeypatch):
    """The "what the data show" sentences quote table cells (an activation's name)."""
    marker = tmp_path / "ran"
    cells = hostile(marker)
    pd.DataFrame({"activation": cells}).to_csv(tmp_path / "t.csv", index=False)
    entry = (["t.csv"], lambda tables: [f"{a} trains" for a in tables["t.csv"]["activation"]])
    monkeypatch.setitem(observations.OBSERVATIONS, "figures/x.png", entry)
    rendered = text_of(render(observations.observations_rst("figures/x.png", tmp_path)))
    assert not marker.exists()
    for cell in cells:
        assert f"{shown(cell)} trains" in rendered


def test_raw_blocks_neutralize_every_jinja_tag_and_render_back_verbatim():
    body = "a {% endraw %} b {%- endraw %} c"
    assert jinja_raw(body) == "{% raw %}a {\\% endraw %} b {\\%- endraw %} c{% endraw %}"
    assert strip_raw(jinja_raw(body)) == "a {\\% endraw %} b {\\%- endraw %} c"
    assert text_of(render(jinja_raw(body))).strip() == body


def test_rst_escape_keeps_data_inline():
    assert rst_escape("|x| *a* _b `c` \\") == "\\|x\\| \\*a\\* \\_b \\`c\\` \\\\"
    assert rst_escape("one\n\n.. raw:: html\r\n  two") == "one .. raw:: html two"
    assert rst_escape(".. include:: f") == "\\.. include:: f"
    assert rst_escape(" ..x") == "\\ ..x"
    assert rst_escape("a .. b") == "a .. b"  # only a leading one could open a directive


def test_claim_ids_and_paths_that_would_be_literal_markup_are_refused():
    entry = {
        "id": "ok",
        "paper": "galu",
        "statement": "s",
        "figure": "figures/x.png",
        "source": "results/t.csv",
        "expression": "y",
        "reduce": "mean",
        "expected": 0,
    }
    for key, bad in [
        ("id", "a``b"),
        ("id", "a\x1b[2J"),
        ("figure", "x.png`` {%"),
        ("source", "results/t.csv\n.. raw:: html"),
    ]:
        with pytest.raises(ValueError, match=f"{key} .* must match"):
            parse_claims([{**entry, key: bad}], "quick")


def test_terminal_text_escapes_control_characters_but_tab_and_newline():
    assert terminal_text("a\x1b[31mred\x07\r\x9b\tb\nc") == "a\\x1b[31mred\\x07\\x0d\\x9b\tb\nc"


def test_run_summary_and_cli_output_show_control_characters_as_escapes(tmp_path, capsys):
    (tmp_path / "results").mkdir()
    row = {
        "claim_id": "x\x1b]0;owned\x07",
        "paper": "galu",
        "statement": "s",
        "verdict": "fail",
        "measured": 1.0,
        "precision": 0.1,
        "figure": "f\x1b[2J.png",
        "scale": "quick",
    }
    pd.DataFrame([row]).to_csv(tmp_path / "results/claims.csv", index=False)
    summary = run_summary(tmp_path)
    assert "\x1b" not in summary and "x\\x1b]0;owned\\x07" in summary
    main(["compare", str(tmp_path / "results"), str(tmp_path / "results")])
    out = capsys.readouterr()
    assert "\x1b" not in out.out + out.err
