"""How a missing extra is to be installed: the released package's command, or in a source
checkout the clone's own (``make serve``, ``pip install -e`` of the checkout)."""

from __future__ import annotations

from pathlib import Path

import pytest

import ragtriage
from ragtriage.extras import install_hint, source_checkout


def _checkout(root: Path, *, makefile: bool = True, name: str = "ragtriage") -> Path:
    package = root / "src" / "ragtriage"
    package.mkdir(parents=True)
    (root / "pyproject.toml").write_text(f'[project]\nname = "{name}"\n', encoding="utf-8")
    if makefile:
        (root / "Makefile").write_text("serve:\n\ttrue\n", encoding="utf-8")
    return package


def test_an_installed_copy_is_told_the_released_package(tmp_path: Path) -> None:
    site = tmp_path / "site-packages" / "ragtriage"
    site.mkdir(parents=True)
    assert source_checkout(site) is None
    assert install_hint("serve", package_dir=site) == "pip install 'ragtriage[serve]'"


def test_a_checkout_is_told_its_make_target_and_pip_install_e(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "clone"
    package = _checkout(root)
    assert source_checkout(package) == root
    monkeypatch.chdir(root)
    hint = install_hint("serve", package_dir=package)
    assert hint.startswith("make serve, or ")
    assert hint.endswith(" -m pip install -e '.[serve]'")
    # from another folder: where the checkout is
    monkeypatch.chdir(tmp_path)
    hint = install_hint("serve", package_dir=package)
    assert hint.startswith("make serve (in clone), or ")
    assert hint.endswith(" -m pip install -e 'clone[serve]'")
    # an extra without a make target: pip install -e of the checkout only
    assert install_hint("pg", package_dir=package).endswith("-m pip install -e 'clone[pg]'")


def test_a_folder_named_src_that_is_not_ragtriage_is_no_checkout(tmp_path: Path) -> None:
    package = _checkout(tmp_path / "other", name="something-else")
    assert source_checkout(package) is None
    package = _checkout(tmp_path / "plain", makefile=False)
    hint = install_hint("serve", package_dir=package)
    assert not hint.startswith("make") and "-m pip install -e" in hint and "plain[serve]" in hint


def test_this_checkout_is_recognised() -> None:
    root = Path(ragtriage.__file__).resolve().parents[2]
    if not (root / "pyproject.toml").is_file():
        pytest.skip("ragtriage is installed, not imported from a checkout")
    assert source_checkout() == root
