"""Building C sources at first use: several files make one library, and an edit to any rebuilds it."""

import ctypes

from fabscope.cbuild import load_library


def _write(folder, name, text):
    path = folder / name
    path.write_text(text)
    return str(path)


def test_several_sources_one_library_rebuilt_when_a_header_changes(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    h = _write(tmp_path, "two.h", "#define TWO 2\nint twice(int x);\n")
    a = _write(tmp_path, "main.c", '#include "two.h"\nint answer(void) { return twice(20) + TWO; }\n')
    b = _write(tmp_path, "two.c", '#include "two.h"\nint twice(int x) { return TWO * x; }\n')
    dll, why = load_library([a, b, h], "twofiles")
    assert why == "" and dll.answer() == 42
    _write(tmp_path, "two.h", "#define TWO 3\nint twice(int x);\n")      # only the header changes
    dll, why = load_library([a, b, h], "twofiles")
    assert why == "" and dll.answer() == 63
    assert len(list((tmp_path / "cache" / "fabscope").glob("twofiles-*.so"))) == 2


def test_one_source_as_before(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    a = _write(tmp_path, "one.c", "int one(void) { return 1; }\n")
    dll, why = load_library(a, "one")
    assert why == "" and isinstance(dll, ctypes.CDLL) and dll.one() == 1


def test_a_missing_part_is_named(tmp_path):
    dll, why = load_library([str(tmp_path / "absent.c")], "absent")
    assert dll is None and "absent.c" in why


def test_other_flags_build_another_library(tmp_path, monkeypatch):
    """The flags are part of the cached library's name: a build with -O2 is never loaded for -O3."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    a = _write(tmp_path, "level.c", "int level(void) {\n#ifdef __OPTIMIZE__\nreturn 1;\n#else\nreturn 0;\n#endif\n}\n")
    assert load_library(a, "level", flags=("-O0",))[0].level() == 0
    assert load_library(a, "level", flags=("-O3",))[0].level() == 1
    assert load_library(a, "level")[0].level() == 1            # CFLAGS: optimised
    assert len(list((tmp_path / "cache" / "fabscope").glob("level-*.so"))) == 2
