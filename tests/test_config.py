from __future__ import annotations

from pathlib import Path

import pytest

from ragtriage.config import PipelineConfig, config_hash, load_config
from ragtriage.errors import ConfigError


def test_defaults_follow_the_paper(tmp_path: Path) -> None:
    cfg = load_config(None, env={})
    assert cfg.chunking.size == 128 and cfg.chunking.overlap == 25
    assert cfg.retrieval.rrf_k == 60
    assert cfg.diagnosis.k == 10
    assert cfg.diagnosis.gt_chunk_vote_fraction == 0.8
    assert cfg.diagnosis.generator_gt_share == 0.5
    assert cfg.diagnosis.concept_coverage == 0.8
    assert not cfg.llm.configured  # no default endpoint, ever


def test_yaml_and_toml_load_the_same(tmp_path: Path) -> None:
    y = tmp_path / "p.yaml"
    y.write_text("retrieval:\n  mode: hybrid_rrf\n  top_k: 7\n", encoding="utf-8")
    t = tmp_path / "p.toml"
    t.write_text('[retrieval]\nmode = "hybrid_rrf"\ntop_k = 7\n', encoding="utf-8")
    a, b = load_config(y, env={}), load_config(t, env={})
    assert a == b
    assert a.retrieval.top_k == 7
    assert config_hash(a) == config_hash(b)
    assert config_hash(a) != config_hash(PipelineConfig())


def test_unknown_key_names_file_and_field(tmp_path: Path) -> None:
    y = tmp_path / "bad.yaml"
    y.write_text("retrieval:\n  topk: 7\n", encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_config(y, env={})
    assert str(y) in str(info.value)
    assert info.value.field == "retrieval.topk"


def test_out_of_range_value_is_an_error(tmp_path: Path) -> None:
    y = tmp_path / "bad.yaml"
    y.write_text("retrieval:\n  text_weight: 1.5\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="text_weight"):
        load_config(y, env={})


def test_broken_yaml_reports_line(tmp_path: Path) -> None:
    y = tmp_path / "broken.yaml"
    y.write_text("retrieval:\n  mode: [dense\n", encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_config(y, env={})
    assert info.value.path == str(y)


def test_env_fills_llm_but_file_wins(tmp_path: Path) -> None:
    env = {
        "RAGTRIAGE_LLM_BASE_URL": "http://127.0.0.1:9/v1",
        "RAGTRIAGE_LLM_MODEL": "m-env",
        "RAGTRIAGE_LLM_API_KEY": "secret",
    }
    cfg = load_config(None, env=env)
    assert cfg.llm.configured and cfg.llm.model == "m-env" and cfg.llm.api_key == "secret"
    y = tmp_path / "p.yaml"
    y.write_text("llm:\n  model: m-file\n", encoding="utf-8")
    assert load_config(y, env=env).llm.model == "m-file"


def test_config_hash_ignores_secrets() -> None:
    a = PipelineConfig.model_validate({"llm": {"api_key": "one"}})
    b = PipelineConfig.model_validate({"llm": {"api_key": "two"}})
    assert config_hash(a) == config_hash(b)


@pytest.mark.parametrize(
    "path", sorted((Path(__file__).parents[1] / "configs").glob("*.yaml")), ids=lambda p: p.name
)
def test_shipped_example_configs_load(path: Path) -> None:
    cfg = load_config(path, env={})
    assert cfg.name and config_hash(cfg) == config_hash(load_config(path, env={}))


def test_nan_and_infinity_are_config_errors(tmp_path: Path) -> None:
    y = tmp_path / "nan.yaml"
    for value in (".nan", ".inf", "-.inf"):
        y.write_text(f"generation: {{temperature: {value}}}\n", encoding="utf-8")
        with pytest.raises(ConfigError) as exc:
            load_config(y, env={})
        assert "generation.temperature" in str(exc.value)


def test_config_types_are_strict(tmp_path: Path) -> None:
    """YAML `top_k: true` or `top_k: "5"` is a mistake, not 1 or 5."""
    y = tmp_path / "strict.yaml"
    for body in ("retrieval: {top_k: true}", "retrieval: {top_k: '5'}"):
        y.write_text(body + "\n", encoding="utf-8")
        with pytest.raises(ConfigError) as exc:
            load_config(y, env={})
        assert "retrieval.top_k" in str(exc.value)
    y.write_text("generation: {temperature: 1}\n", encoding="utf-8")  # an int for a float
    assert load_config(y, env={}).generation.temperature == 1.0


def test_a_key_given_twice_is_an_error_naming_both_lines(tmp_path: Path) -> None:
    y = tmp_path / "dup.yaml"
    y.write_text("name: a\nretrieval:\n  mode: dense\nretrieval:\n  mode: bm25\n", "utf-8")
    with pytest.raises(ConfigError) as exc:
        load_config(y, env={})
    assert exc.value.line == 4 and "duplicate key 'retrieval' (first on line 2)" in str(exc.value)
    y.write_text("rerank: {top_k: 2, top_k: 3}\n", "utf-8")
    with pytest.raises(ConfigError, match="duplicate key 'top_k'"):
        load_config(y, env={})
