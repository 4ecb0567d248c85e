"""Structural checks of action.yml that no schema makes (used by test.sh).

    python3 .ci/action/check_action.py [action.yml]

Prints one `ok NAME` or `FAIL NAME: why` line per check; exits 1 if any failed.
"""

import os
import re
import sys

import yaml

RUN_SH = 'bash "$GITHUB_ACTION_PATH/.ci/action/run.sh" '
SUBCOMMANDS = {"install", "validate", "upload-failed"}
# input name -> the variable run.sh reads it from
INPUT_ENV = {
    "paths": "GGUF_VALIDATE_PATHS",
    "profile": "GGUF_VALIDATE_PROFILE",
    "llama-cpp": "GGUF_VALIDATE_LLAMA_CPP",
    "loader": "GGUF_VALIDATE_LOADER",
    "fix": "GGUF_VALIDATE_FIX",
    "args": "GGUF_VALIDATE_ARGS",
    "sarif-upload": "GGUF_VALIDATE_SARIF_UPLOAD",
}

# input name -> the variable run.sh's install reads it from
INSTALL_ENV = {"install": "GGUF_VALIDATE_INSTALL"}

results = []


def by_name(steps, name):
    return next((s for s in steps if s.get("name") == name), {})


def check(name, ok, why=""):
    results.append((name, bool(ok), why))


def main(path):
    with open(path, encoding="utf-8") as f:
        action = yaml.safe_load(f)
    steps = action["runs"]["steps"]
    by_id = {s["id"]: s for s in steps if "id" in s}

    runs = [s for s in steps if "run" in s]
    bad = [s.get("name", "?") for s in runs if "${{" in s["run"]]
    check("no ${{ ... }} expression (inputs or any other) inside a run: script", not bad, f"in {bad}")
    bad = [s.get("name", "?") for s in runs if not s["run"].strip().startswith(RUN_SH)]
    check("every run: step calls .ci/action/run.sh", not bad, f"{bad}")
    subs = {s["run"].strip()[len(RUN_SH):] for s in runs if s["run"].strip().startswith(RUN_SH)}
    check("run.sh subcommands are known", subs <= SUBCOMMANDS, f"{subs - SUBCOMMANDS}")

    validate = by_id.get("validate", {})
    env = validate.get("env", {})
    missing = [
        f"{name} -> {var}"
        for name, var in INPUT_ENV.items()
        if env.get(var, "").replace(" ", "") != "${{inputs.%s}}" % name
    ]
    check("every input reaches the validate step through env:", not missing, f"missing {missing}")
    install_env = by_name(steps, "Install gguf-validate").get("env", {})
    missing = [
        f"{name} -> {var}"
        for name, var in INSTALL_ENV.items()
        if install_env.get(var, "").replace(" ", "") != "${{inputs.%s}}" % name
    ]
    check("the install input reaches the install step through env:", not missing, f"missing {missing}")
    unknown = set(action.get("inputs", {})) - set(INPUT_ENV) - set(INSTALL_ENV)
    check("no input that the validate or install step does not receive", not unknown, f"{unknown}")
    check(
        "install defaults to auto (the wheel, else the released binary; never a compile unless asked)",
        action["inputs"]["install"].get("default") == "auto",
    )

    for name in ("paths", "args"):
        desc = action["inputs"][name]["description"]
        check(f"input {name} is documented as one per line", "one per line" in desc, desc)
    check(
        "sarif-upload defaults to auto",
        action["inputs"]["sarif-upload"].get("default") == "auto",
    )

    # One version everywhere: every `uses: gguf-validate/gguf-validate@REF`
    # in the action, the README and the book names the tag of the
    # workspace's version, the wheel the action installs.
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    with open(os.path.join(root, "Cargo.toml"), encoding="utf-8") as f:
        version = re.search(r'^version = "([^"]+)"', f.read(), re.M).group(1)
    refs = {}
    docs = [path, os.path.join(root, "README.md")]
    book = os.path.join(root, "parser", "docs", "src")
    docs += [os.path.join(book, n) for n in sorted(os.listdir(book)) if n.endswith(".md")]
    for doc in docs:
        with open(doc, encoding="utf-8") as f:
            for ref in re.findall(r"gguf-validate/gguf-validate@([\w.\-]+)", f.read()):
                refs.setdefault(ref, []).append(os.path.relpath(doc, root))
    check(
        f"the action, README and book use one version, v{version} (the wheel it installs)",
        set(refs) == {f"v{version}"},
        f"{refs}",
    )

    upload = by_id.get("upload", {})
    cond = re.sub(r"\s+", " ", str(upload.get("if", "")))
    check("upload step exists and uses upload-sarif", "upload-sarif" in upload.get("uses", ""))
    check("upload does not fail the job (continue-on-error: true)", upload.get("continue-on-error") is True)
    check(
        "upload runs only when the validate step ran and chose to upload",
        "steps.validate.outcome != 'skipped'" in cond and "steps.validate.outputs.upload == 'true'" in cond,
        cond,
    )
    check("upload is not under always()", "always()" not in cond, cond)

    failed = 0
    for name, ok, why in results:
        if ok:
            print(f"ok   {name}")
        else:
            failed += 1
            print(f"FAIL {name}: {why}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "action.yml"))
