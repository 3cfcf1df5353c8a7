"""The verdict cache: each killed mutant's verdict and each test's control outcome, under a key of what can change it.

A plain JSON file committed with the code (VERDICT_DIR/<target>-<device>-<budget>.json): a run
re-runs only the mutants and re-checks only the tests whose key no longer matches. A key hashes the
run's settings, the environment, the mutation machinery's code, the mutant's definition (or the
test's node id) and the hash of every dependency (deps.py). docs/mutation.md (Verdict cache) says
what is in and out of a key.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional

from conformance.mutations.deps import TREE, VERDICT_DIR, Hasher, environment, machinery
from conformance.mutations.kinds import AnyMutant

FORMAT = 1
FILE_NAME = "verdicts.json"  # the refreshed verdicts, in every run's --out
ABOUT = (
    "attncheck mutate's verdict cache (docs/mutation.md, Verdict cache): written by "
    "`attncheck mutate --update-verdicts`; a run re-runs only what no longer matches its key"
)


class CorruptVerdicts(ValueError):
    """A verdict file that cannot be read (not JSON, a merge conflict, not an object of this format's fields)."""

    def __init__(self, path: Path, why: str) -> None:
        self.path = path
        self.why = why
        super().__init__(f"{path}: {why}")


def default_path(root: Path, target: str, device: str, budget: str) -> Path:
    return root / VERDICT_DIR / f"{target}-{device}-{budget}.json"


def definition(m: AnyMutant) -> dict[str, Any]:
    """Every field of a catalogue entry (its kind's name too): a changed entry is a changed key."""
    return {"type": type(m).__name__, **dataclasses.asdict(m)}


def _canonical(obj: Any) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()


class Keyer:
    """Keys against the repository as it is now: settings, environment, machinery, and dependency hashes."""

    def __init__(self, root: Path, settings: Mapping[str, Any], env: Optional[Mapping[str, Any]] = None) -> None:
        self.root = root
        self.settings = dict(settings)
        self.env = dict(env if env is not None else environment())
        self.machinery = machinery(root)
        self.hash = Hasher(root)

    def key(self, subject: Any, deps: Iterable[str]) -> str:
        body = {
            "format": FORMAT,
            "settings": self.settings,
            "env": self.env,
            "machinery": self.machinery,
            "subject": subject,
            "deps": {d: self.hash(d) for d in sorted(set(deps))},
        }
        return hashlib.sha256(_canonical(body)).hexdigest()[:32]

    def mutant_key(self, m: AnyMutant, deps: Iterable[str]) -> str:
        return self.key({"mutant": definition(m)}, deps)

    def row_key(self, row: str, deps: Iterable[str]) -> str:
        return self.key({"test": row}, deps)


def group_id(deps: Iterable[str]) -> str:
    return hashlib.sha256("\n".join(sorted(set(deps))).encode()).hexdigest()[:16]


class Verdicts:
    """The file's content: dependency groups (shared lists), rows (tests) and mutants, each with its key."""

    def __init__(
        self,
        settings: Optional[Mapping[str, Any]] = None,
        env: Optional[Mapping[str, Any]] = None,
        machinery_hash: str = "",
    ) -> None:
        self.settings = dict(settings or {})
        self.env = dict(env or {})
        self.machinery = machinery_hash
        self.files: dict[str, str] = {}
        self.groups: dict[str, list[str]] = {}
        self.rows: dict[str, dict[str, Any]] = {}
        self.mutants: dict[str, dict[str, Any]] = {}

    # ---- reading ---------------------------------------------------------------------------------
    @classmethod
    def load(cls, path: Path) -> "Verdicts":
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError) as e:
            raise CorruptVerdicts(path, f"cannot be read ({e})") from None
        except json.JSONDecodeError as e:
            raise CorruptVerdicts(path, f"is not JSON (line {e.lineno}: {e.msg}; a merge conflict?)") from None
        if isinstance(data, dict) and data.get("format") != FORMAT and "format" in data:
            return cls()  # another format's file: nothing in it is trusted, every mutant runs
        fields = ("format", "settings", "env", "machinery", "files", "groups", "rows", "mutants")
        if not isinstance(data, dict) or any(f not in data for f in fields):
            raise CorruptVerdicts(path, f"is not a verdict file (expected an object with {', '.join(fields)})")
        v = cls(data["settings"], data["env"], data["machinery"])
        v.files, v.groups, v.rows, v.mutants = data["files"], data["groups"], data["rows"], data["mutants"]
        for what in ("files", "groups", "rows", "mutants"):
            if not isinstance(getattr(v, what), dict):
                raise CorruptVerdicts(path, f"its {what!r} is not an object")
        if any(not isinstance(g, list) or not all(isinstance(d, str) for d in g) for g in v.groups.values()):
            raise CorruptVerdicts(path, "a dependency group is not a list of names")
        for name, e in {**v.rows, **v.mutants}.items():
            if (
                not isinstance(e, dict)
                or not isinstance(e.get("key"), str)
                or not isinstance(e.get("deps"), list)
                or any(g not in v.groups for g in e["deps"])
            ):
                raise CorruptVerdicts(path, f"the entry {name!r} lacks a key or names a dependency group it lacks")
        return v

    def deps_of(self, entry: Mapping[str, Any]) -> set[str]:
        return set().union(*(self.groups[g] for g in entry["deps"])) if entry["deps"] else set()

    def valid_mutants(self, keyer: Keyer, mutants: Iterable[AnyMutant]) -> dict[str, dict[str, Any]]:
        """The entries whose key still matches (a killed verdict, of this format, for an entry as it is now)."""
        out = {}
        for m in mutants:
            e = self.mutants.get(m.name)
            if e and e.get("status") == "killed" and keyer.mutant_key(m, self.deps_of(e)) == e["key"]:
                out[m.name] = e
        return out

    def valid_rows(self, keyer: Keyer, rows: Iterable[str]) -> dict[str, dict[str, Any]]:
        out = {}
        for r in rows:
            e = self.rows.get(r)
            if e and e.get("outcome") in ("passed", "skipped") and keyer.row_key(r, self.deps_of(e)) == e["key"]:
                out[r] = e
        return out

    def changed(self, now: "Verdicts", hasher: Hasher) -> list[str]:
        """Why keys moved since this file was written, for people: settings, environment, machinery, and
        the dependencies whose hash changed."""
        out = []
        for what in ("settings", "env"):
            was, is_ = getattr(self, what), getattr(now, what)
            out += [
                f"{what} {k}: {was.get(k)} -> {is_.get(k)}"
                for k in sorted(set(was) | set(is_))
                if was.get(k) != is_.get(k)
            ]
        if self.machinery != now.machinery:
            out.append("the mutation machinery's code (conformance/mutations/*.py less the catalogues)")
        out += [
            (
                "a file of the tree changed (what a test that starts a process depends on)"
                if d == TREE
                else f"{d} changed"
            )
            for d, h in sorted(self.files.items())
            if hasher(d) != h
        ]
        return out

    # ---- writing ---------------------------------------------------------------------------------
    def group(self, deps: Iterable[str]) -> str:
        deps = sorted(set(deps))
        gid = group_id(deps)
        self.groups[gid] = deps
        return gid

    def keep(self, kind: str, name: str, entry: Mapping[str, Any], source: "Verdicts") -> None:
        """An entry carried over from `source` as it was (its key matched), with its groups."""
        for g in entry["deps"]:
            self.groups[g] = list(source.groups[g])
        getattr(self, kind)[name] = dict(entry)

    def to_json(self, keyer: Keyer) -> dict[str, Any]:
        used = {g for e in (*self.rows.values(), *self.mutants.values()) for g in e["deps"]}
        groups = {g: self.groups[g] for g in sorted(used)}
        files = {d: keyer.hash(d) for d in sorted(set().union(*groups.values()))} if groups else {}
        return {
            "format": FORMAT,
            "about": ABOUT,
            "settings": self.settings,
            "env": self.env,
            "machinery": self.machinery,
            "files": files,
            "groups": groups,
            "rows": {r: self.rows[r] for r in sorted(self.rows)},
            "mutants": {m: self.mutants[m] for m in sorted(self.mutants)},
        }

    def write(self, path: Path, keyer: Keyer) -> None:
        """Written whole to a temporary name, then renamed: a reader never sees half a file."""
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(self.to_json(keyer), indent=1) + "\n", encoding="utf-8")
        tmp.replace(path)


def differences(committed: Optional[Verdicts], refreshed: Verdicts) -> list[str]:
    """What makes `committed` stale against `refreshed`: entries whose key differs, new or gone."""
    out = []
    for kind, label in (("mutants", "mutant"), ("rows", "test")):
        was = getattr(committed, kind) if committed is not None else {}
        now = getattr(refreshed, kind)
        for name in sorted(set(was) | set(now)):
            if name not in now:
                out.append(f"{label} {name}: committed, no longer in the run (or not killed)")
            elif name not in was:
                out.append(f"{label} {name}: not committed")
            elif was[name]["key"] != now[name]["key"]:
                out.append(f"{label} {name}: its key changed")
    return out


def refresh_command(target: str, device: str, budget: str) -> str:
    """The command that rewrites the verdict file of a target, device and budget."""
    return " ".join(
        ["attncheck mutate", f"--target {target}"]
        + ([f"--device {device}"] if device != "cpu" else [])
        + ([f"--budget {budget}"] if budget != "quick" else [])
        + ["--update-verdicts"]
    )


def stale_message(root: Path, path: Path, refreshed: Verdicts, target: str, device: str, budget: str) -> str:
    """ "" when the verdict file at `path` holds exactly the refreshed verdicts' keys; else what CI fails with:
    what no longer matches, why, and the command that refreshes the file."""
    committed = Verdicts.load(path) if path.is_file() else None
    diffs = differences(committed, refreshed)
    if not diffs:
        return ""
    rel = path.relative_to(root) if path.is_relative_to(root) else path
    why = committed.changed(refreshed, Hasher(root)) if committed is not None else [f"{rel} does not exist"]
    shown = diffs[:20] + ([f"... and {len(diffs) - 20} more"] if len(diffs) > 20 else [])
    return (
        f"the committed verdicts {rel} are stale: {len(diffs)} entries no longer match their keys (this run "
        f"re-checked them; a fresh clone's CI would again). Fix: run `{refresh_command(target, device, budget)}` "
        f"and commit {rel}.\n  " + "\n  ".join(shown) + "\nbecause:\n  " + "\n  ".join(why[:20] or ["?"])
    )
