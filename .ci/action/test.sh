#!/usr/bin/env bash
# Tests of the GitHub Action (action.yml, .ci/action/run.sh) and of the
# pre-commit hook manifest, offline:
#   (a) action.yml, .pre-commit-hooks.yaml and any .github/workflows/*.yml
#       parse as YAML and are valid against the official schemas
#       (check-jsonschema's vendored ones; pre-commit's own manifest check);
#   (b) structural checks of action.yml (check_action.py): no `${{ }}` inside
#       a `run:`, every input through `env:`, the upload step's conditions;
#   (c) run.sh run locally as the action runs it (fake RUNNER_TEMP,
#       GITHUB_OUTPUT, GITHUB_STEP_SUMMARY; a prebuilt binary) on paths with
#       spaces and hostile inputs: no injected command runs, the exit codes
#       and the job summary are right;
#   (d) run.sh install from a built wheel (GGUF_VALIDATE_TEST_WHEEL), as the
#       action installs the released one: checksum verified, then validate
#       runs the installed command; a wrong checksum and the cargo
#       fallback without cargo are refused; pre-commit installs the hook
#       (`language: python`, the root pyproject.toml) from that wheel;
#   (e) run.sh install of the released binary from a release served from a
#       folder: its SHA-256 checked (a tampered archive is refused), and
#       `auto` falls back to it where Python cannot install the wheel, and
#       refuses (never compiles) where neither can be had.
#
#   python3 -m pip install -r .ci/action/requirements.txt
#   GGUF_VALIDATE_BIN=target/release/gguf-validate [GGUF_VALIDATE_TEST_WHEEL=WHEEL] bash .ci/action/test.sh
#
# Closes with `N passed, M failed` (`, K skipped` when shellcheck is absent);
# exits 1 when anything failed.
# Hostile strings below are literal on purpose:
# shellcheck disable=SC2016
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
root=$PWD

: "${GGUF_VALIDATE_BIN:?set GGUF_VALIDATE_BIN to a built gguf-validate (e.g. target/release/gguf-validate)}"
case $GGUF_VALIDATE_BIN in /*) bin=$GGUF_VALIDATE_BIN ;; *) bin=$root/$GGUF_VALIDATE_BIN ;; esac
run_sh=$root/.ci/action/run.sh
sample=$root/corpus/samples/tiny-llama.gguf
invalid_case=i_architecture_missing.gguf # corpus/gguf: rejected by strict, accepted by ggml

passed=0 failed=0 skipped=0
ok() {
    passed=$((passed + 1))
    printf 'ok   %s\n' "$1"
}
ko() {
    failed=$((failed + 1))
    printf 'FAIL %s\n' "$1"
}
check() {
    local name=$1
    shift
    if "$@"; then ok "$name"; else ko "$name"; fi
}
# Run a command quietly; show its output only when it fails.
quiet() {
    local out
    if out=$("$@" 2>&1); then return 0; fi
    printf '%s\n' "$out" | sed 's/^/       | /'
    return 1
}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "== (a) YAML and schemas"
for f in action.yml .pre-commit-hooks.yaml; do
    check "$f parses as YAML" quiet python3 -c 'import sys, yaml; yaml.safe_load(open(sys.argv[1]))' "$f"
done
# No network for the schema checks where a network namespace can be made:
# proves the schemas are the vendored ones.
offline=()
if unshare -n true 2>/dev/null; then offline=(unshare -n --); fi
want_cj=$(sed -n 's/^check-jsonschema==//p' .ci/action/requirements.txt)
want_pc=$(sed -n 's/^pre-commit==//p' .ci/action/requirements.txt)
if command -v check-jsonschema >/dev/null; then
    have=$(check-jsonschema --version 2>&1)
    check "check-jsonschema is the pinned $want_cj (have: $have)" test "${have##* }" = "$want_cj"
    check "action.yml is valid against vendor.github-actions${offline:+ (offline)}" \
        quiet "${offline[@]}" check-jsonschema --builtin-schema vendor.github-actions action.yml
    workflows=()
    for f in .github/workflows/*.yml .github/workflows/*.yaml; do
        if [ -f "$f" ]; then workflows+=("$f"); fi
    done
    if [ "${#workflows[@]}" -gt 0 ]; then
        check "${#workflows[@]} workflow(s) valid against vendor.github-workflows" \
            quiet "${offline[@]}" check-jsonschema --builtin-schema vendor.github-workflows "${workflows[@]}"
    else
        echo "     (no .github/workflows/*.yml to check)"
    fi
else
    ko "check-jsonschema is installed (python3 -m pip install -r .ci/action/requirements.txt)"
fi
if python3 -c 'import pre_commit' 2>/dev/null; then
    have=$(python3 -m pre_commit --version 2>&1)
    check "pre-commit is the pinned $want_pc (have: $have)" test "${have##* }" = "$want_pc"
    check ".pre-commit-hooks.yaml is a valid hook manifest (pre-commit validate-manifest)" \
        quiet "${offline[@]}" python3 -m pre_commit validate-manifest .pre-commit-hooks.yaml
else
    ko "pre-commit is installed (python3 -m pip install -r .ci/action/requirements.txt)"
fi

echo "== (b) action.yml structure"
while IFS= read -r line; do
    case $line in
        "ok   "*) ok "${line#ok   }" ;;
        "FAIL "*) ko "${line#FAIL }" ;;
        *) printf '%s\n' "$line" ;;
    esac
done < <(python3 .ci/action/check_action.py action.yml 2>&1 || echo "FAIL check_action.py ran")
# The check itself catches the old action's injection.
printf '%s\n' 'runs:' '  using: composite' '  steps:' '    - shell: bash' \
    '      run: gguf-validate ${{ inputs.paths }}' >"$work/old-action.yml"
check "check_action.py rejects \`run: gguf-validate \${{ inputs.paths }}\`" \
    eval '! python3 .ci/action/check_action.py "$work/old-action.yml" >/dev/null 2>&1'
if command -v shellcheck >/dev/null; then
    check "shellcheck .ci/action/*.sh" quiet shellcheck .ci/action/run.sh .ci/action/test.sh
else
    skipped=$((skipped + 1))
    echo "skip shellcheck (not installed)"
fi

echo "== (c) run.sh, run as the action runs it"
check "GGUF_VALIDATE_BIN ($bin) is executable" test -x "$bin"
check "corpus/gguf/manifest.json: $invalid_case is rejected by strict, accepted by ggml" \
    python3 -c 'import json, sys
c = {c["file"]: c for c in json.load(open("corpus/gguf/manifest.json"))["cases"]}[sys.argv[1]]
sys.exit(c["verdict"]["strict"] != "reject" or c["verdict"]["ggml"] != "accept")' "$invalid_case"

# The workspace: the sample under names that used to break the action or let
# it run commands.
ws=$work/workspace
hostile=(
    'my models/tiny llama.gguf'
    '$(touch /tmp/pwned)/tiny.gguf'
    '$(touch pwned-subst).gguf'
    'a; touch pwned-semi.gguf'
    '`touch pwned-tick`.gguf'
    "it's a \"quote\".gguf"
    '--help'
    'dump'
)
for p in "${hostile[@]}"; do
    mkdir -p "$ws/$(dirname -- "$p")"
    cp "$sample" "$ws/$p"
done
cp "$root/corpus/gguf/$invalid_case" "$ws/invalid model.gguf"
mkdir -p "$ws/no models here"
echo "not a model" >"$ws/no models here/readme.txt"
rm -f /tmp/pwned

no_markers() {
    local found
    # Found markers are reported and removed, so the next case starts clean.
    found=$(find "$work" /tmp/pwned -maxdepth 4 -type f -name 'pwned*' -print -delete 2>/dev/null)
    if [ -n "$found" ]; then
        printf '%s\n' "$found" | sed 's/^/       | created: /'
        return 1
    fi
}

# run_case NAME WANT_RC [VAR=VALUE...]: run.sh validate in the workspace with a
# clean environment plus the given variables (the env: of action.yml's
# validate step); leaves its output in $log, $out and $summary.
n=0
run_case() {
    local name=$1 want=$2 rc=0
    shift 2
    n=$((n + 1))
    local dir=$work/case-$n
    mkdir -p "$dir/tmp"
    log=$dir/log out=$dir/github_output summary=$dir/step_summary
    : >"$out"
    : >"$summary"
    (cd "$ws" && env -i PATH="$PATH" HOME="$dir" RUNNER_TEMP="$dir/tmp" \
        GITHUB_OUTPUT="$out" GITHUB_STEP_SUMMARY="$summary" GITHUB_REPOSITORY=owner/repo \
        GGUF_VALIDATE_BIN="$bin" "$@" bash "$run_sh" validate) >"$log" 2>&1 || rc=$?
    if [ "$rc" = "$want" ]; then
        ok "$name: exit $rc"
    else
        ko "$name: exit $rc, expected $want"
        sed 's/^/       | /' "$log"
    fi
    check "$name: no injected command ran" no_markers
}
has() { grep -qF -- "$2" "$1"; }
summary_has() { check "$1: summary has '$2'" has "$summary" "$2"; }
output_has() { check "$1: GITHUB_OUTPUT has $2" grep -qx -- "$2" "$out"; }

name="valid sample at a path with spaces (single line)"
run_case "$name" 0 GGUF_VALIDATE_PATHS="my models/tiny llama.gguf"
summary_has "$name" "| 1 | 1 | 0 | 0 |"
output_has "$name" "files=1"
output_has "$name" "upload=true"
check "$name: GITHUB_OUTPUT names an existing SARIF file" \
    eval 'test -s "$(sed -n "s/^sarif=//p" "$out")"'

name="hostile paths, newline-separated, blank lines and indentation"
list=$(printf '  %s\n\n' "${hostile[@]}")
run_case "$name" 0 GGUF_VALIDATE_PATHS="$list" GGUF_VALIDATE_PROFILE=strict
summary_has "$name" "| ${#hostile[@]} | ${#hostile[@]} | 0 | 0 |"
hostile_case=$(dirname "$log")

name="invalid corpus file (strict)"
run_case "$name" 1 GGUF_VALIDATE_PATHS="invalid model.gguf"
summary_has "$name" "| 1 | 0 | 1 | 0 |"
check "$name: annotated" has "$log" "::error file=invalid model.gguf,title=architecture-missing"

name="valid and invalid together, profile input spec"
run_case "$name" 1 GGUF_VALIDATE_PATHS=$'my models\ninvalid model.gguf' GGUF_VALIDATE_PROFILE=spec
summary_has "$name" "| 2 | 1 | 1 | 0 |"

name="args one per line (--profile / ggml accepts the invalid file)"
run_case "$name" 0 GGUF_VALIDATE_PATHS="invalid model.gguf" GGUF_VALIDATE_ARGS=$'--profile\nggml\n--jobs=1'

name="hostile args line is one argument, not shell"
run_case "$name" 2 GGUF_VALIDATE_PATHS="dump" GGUF_VALIDATE_ARGS='$(touch pwned-arg); touch pwned-arg2'
summary_has "$name" "| 2 | 1 | 0 | 1 |"
hostile_args_case=$(dirname "$log")

name="llama-cpp input: a release window (the sample loads in all of them)"
run_case "$name" 0 GGUF_VALIDATE_PATHS="my models/tiny llama.gguf" GGUF_VALIDATE_LLAMA_CPP="b3889.."

name="llama-cpp input: a release the tool does not know is a usage error, never shell code"
run_case "$name" 2 GGUF_VALIDATE_PATHS="my models/tiny llama.gguf" GGUF_VALIDATE_LLAMA_CPP='b1; touch pwned-llama'

name="loader input: sd.cpp judges the sample as a diffusion model (it is none: not valid for it)"
run_case "$name" 1 GGUF_VALIDATE_PATHS="my models/tiny llama.gguf" GGUF_VALIDATE_LOADER="sd.cpp"

name="fix: true fixes a folder's files in place, then validates them (all fixed: exit 0)"
mkdir -p "$ws/to fix"
cp "$root/corpus/fixes/trailing_bytes.gguf" "$ws/to fix/a.gguf"
cp "$root/corpus/fixes/tensor_data_gap.gguf" "$ws/to fix/b.gguf"
run_case "$name" 0 GGUF_VALIDATE_PATHS="to fix" GGUF_VALIDATE_FIX=true
output_has "$name" "fixed=2"
check "$name: a.gguf is the committed fixed file" cmp -s "$ws/to fix/a.gguf" "$root/corpus/fixes/trailing_bytes.fixed.gguf"
check "$name: b.gguf is the committed fixed file" cmp -s "$ws/to fix/b.gguf" "$root/corpus/fixes/tensor_data_gap.fixed.gguf"
summary_has "$name" "2 of 2 file(s) fixed in place"

name="fix: true holds back an unsafe fix, and the finding left fails the step"
cp "$root/corpus/fixes/token_id_out_of_range.gguf" "$ws/to fix/c.gguf"
run_case "$name" 1 GGUF_VALIDATE_PATHS="to fix/c.gguf" GGUF_VALIDATE_FIX=true
check "$name: c.gguf unchanged" cmp -s "$ws/to fix/c.gguf" "$root/corpus/fixes/token_id_out_of_range.gguf"

name="fix: unsafe makes it"
run_case "$name" 0 GGUF_VALIDATE_PATHS="to fix/c.gguf" GGUF_VALIDATE_FIX=unsafe
check "$name: c.gguf is the committed fixed file" cmp -s "$ws/to fix/c.gguf" "$root/corpus/fixes/token_id_out_of_range.fixed.gguf"
rm -rf "$ws/to fix"

name="hostile fix input refused before running"
run_case "$name" 2 GGUF_VALIDATE_PATHS="dump" GGUF_VALIDATE_FIX='true; touch pwned-fix'
summary_has "$name" "input fix must be false, true or unsafe"

name="hostile loader refused before running"
run_case "$name" 2 GGUF_VALIDATE_PATHS="dump" GGUF_VALIDATE_LOADER='sd.cpp; touch pwned-loader'
summary_has "$name" "input loader must be llama.cpp, sd.cpp or comfyui-gguf"

name="hostile profile refused before running"
run_case "$name" 2 GGUF_VALIDATE_PATHS="dump" GGUF_VALIDATE_PROFILE='strict; touch pwned-profile'
summary_has "$name" "input profile must be strict, spec or ggml"
check "$name: nothing validated" eval '! grep -q "^files=" "$out"'

name="empty paths"
run_case "$name" 2 GGUF_VALIDATE_PATHS=$'\n   \n'
summary_has "$name" "input paths is empty"

name="directory without models (nothing validated)"
run_case "$name" 2 GGUF_VALIDATE_PATHS="no models here"
summary_has "$name" "nothing was validated"

name="missing file"
run_case "$name" 2 GGUF_VALIDATE_PATHS="no such model.gguf"
summary_has "$name" "| 1 | 0 | 0 | 1 |"

name="pull request from a fork, sarif-upload auto"
run_case "$name" 0 GGUF_VALIDATE_PATHS=dump GGUF_VALIDATE_SARIF_UPLOAD=auto GGUF_VALIDATE_PR_HEAD_REPO=someone/fork
output_has "$name" "upload=false"
summary_has "$name" "SARIF upload: skipped: pull request from another repository"

name="pull request from the same repository, sarif-upload auto"
run_case "$name" 0 GGUF_VALIDATE_PATHS=dump GGUF_VALIDATE_PR_HEAD_REPO=owner/repo
output_has "$name" "upload=true"

name="Dependabot pull request, sarif-upload auto"
run_case "$name" 0 GGUF_VALIDATE_PATHS=dump GGUF_VALIDATE_PR_HEAD_REPO=owner/repo 'GITHUB_ACTOR=dependabot[bot]'
output_has "$name" "upload=false"

name="sarif-upload false"
run_case "$name" 0 GGUF_VALIDATE_PATHS=dump GGUF_VALIDATE_SARIF_UPLOAD=false
output_has "$name" "upload=false"

name="sarif-upload yes (not a value)"
run_case "$name" 2 GGUF_VALIDATE_PATHS=dump GGUF_VALIDATE_SARIF_UPLOAD=yes
summary_has "$name" "input sarif-upload must be auto, true or false"

name="install with GGUF_VALIDATE_BIN set"
check "$name: skips cargo install" quiet env -i PATH="$PATH" RUNNER_TEMP="$work/t" GGUF_VALIDATE_BIN="$bin" bash "$run_sh" install
name="upload-failed"
: >"$work/s"
check "$name: explains in the summary" quiet env -i PATH="$PATH" RUNNER_TEMP="$work/t" GITHUB_STEP_SUMMARY="$work/s" bash "$run_sh" upload-failed
summary=$work/s
summary_has "$name" "security-events: write"

echo "== (d) install: the wheel (as released), checksum verified; the fallback's refusals"
if [ -n "${GGUF_VALIDATE_TEST_WHEEL:-}" ]; then
    case $GGUF_VALIDATE_TEST_WHEEL in /*) wheel=$GGUF_VALIDATE_TEST_WHEEL ;; *) wheel=$root/$GGUF_VALIDATE_TEST_WHEEL ;; esac
    sum=$(sha256sum "$wheel" | cut -d' ' -f1)
    t=$work/wheel
    name="install from the wheel"
    check "$name: pip installs it into a virtual environment" quiet env -i PATH="$PATH" HOME="$work" \
        RUNNER_TEMP="$t" GGUF_VALIDATE_WHEEL="$wheel" GGUF_VALIDATE_WHEEL_SHA256="$sum" bash "$run_sh" install
    installed=$t/gguf-validate/bin/gguf-validate
    check "$name: the installed command reports the version" quiet "$installed" --version
    run_case "$name: validate runs the installed command" 0 GGUF_VALIDATE_PATHS="my models/tiny llama.gguf" \
        GGUF_VALIDATE_BIN="$installed"
    summary_has "$name: validate runs the installed command" "| 1 | 1 | 0 | 0 |"
    run_case "$name: an invalid file still fails the step" 1 GGUF_VALIDATE_PATHS="$root/corpus/gguf/$invalid_case" \
        GGUF_VALIDATE_BIN="$installed"
    name="install from a wheel with another checksum"
    : >"$work/s"
    rc=0
    env -i PATH="$PATH" HOME="$work" RUNNER_TEMP="$work/t2" GITHUB_STEP_SUMMARY="$work/s" GGUF_VALIDATE_WHEEL="$wheel" \
        GGUF_VALIDATE_WHEEL_SHA256="$(printf '0%.0s' {1..64})" bash "$run_sh" install >/dev/null 2>&1 || rc=$?
    check "$name: is refused (exit 2)" test "$rc" = 2
    check "$name: nothing was installed" test ! -e "$work/t2/gguf-validate/bin/gguf-validate"
    summary=$work/s
    summary_has "$name" "SHA-256 is not the expected one"
    name="pre-commit hook (language: python) from the wheel"
    if command -v git >/dev/null && git rev-parse --git-dir >/dev/null 2>&1; then
        rc=0
        PIP_FIND_LINKS=$(dirname "$wheel") PRE_COMMIT_HOME="$work/pre-commit" python3 -m pre_commit try-repo "$root" \
            gguf-validate --files corpus/samples/tiny-llama.gguf "corpus/gguf/$invalid_case" >"$work/pc.log" 2>&1 || rc=$?
        check "$name: fails on the invalid file (exit 1)" test "$rc" = 1
        check "$name: ran the installed command on both files" has "$work/pc.log" "2 files: 1 valid, 1 invalid"
    else
        skipped=$((skipped + 1))
        echo "skip $name: not a git checkout"
    fi
else
    skipped=$((skipped + 1))
    echo "skip (d): GGUF_VALIDATE_TEST_WHEEL is not set (a built wheel)"
fi
name="install: cargo without cargo on PATH"
: >"$work/s"
rc=0
env -i PATH=/nonexistent RUNNER_TEMP="$work/t3" GITHUB_STEP_SUMMARY="$work/s" GITHUB_ACTION_PATH="$root" \
    GGUF_VALIDATE_INSTALL=cargo /bin/bash "$run_sh" install >/dev/null 2>&1 || rc=$?
check "$name: is refused (exit 2)" test "$rc" = 2
summary=$work/s
summary_has "$name" "cargo is not on PATH"
name="install: an unknown method"
: >"$work/s"
rc=0
env -i PATH="$PATH" RUNNER_TEMP="$work/t4" GITHUB_STEP_SUMMARY="$work/s" GGUF_VALIDATE_INSTALL=npm \
    bash "$run_sh" install >/dev/null 2>&1 || rc=$?
check "$name: is refused (exit 2)" test "$rc" = 2
summary=$work/s
summary_has "$name" "input install must be auto, wheel, binary or cargo"

echo "== (e) install: the released binary (a release served from a folder), its SHA-256 checked; auto's order"
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' "$root/Cargo.toml" | head -n 1)
if [ "$(uname -s)/$(uname -m)" = Linux/x86_64 ] && command -v curl >/dev/null; then
    release=$work/release
    asset=gguf-validate-v$version-x86_64-unknown-linux-musl
    mkdir -p "$release/$asset"
    cp "$bin" "$release/$asset/gguf-validate"
    (cd "$release" && tar czf "$asset.tar.gz" "$asset" && sha256sum "$asset.tar.gz" >"$asset.tar.gz.sha256" && rm -rf "$asset")
    name="install: binary"
    check "$name: downloads, checks and unpacks it" quiet env -i PATH="$PATH" RUNNER_TEMP="$work/b1" \
        GITHUB_ACTION_PATH="$root" GGUF_VALIDATE_RELEASE_URL="file://$release" GGUF_VALIDATE_INSTALL=binary \
        bash "$run_sh" install
    installed=$work/b1/gguf-validate/bin/gguf-validate
    check "$name: the installed command reports the version" quiet "$installed" --version
    run_case "$name: validate runs the installed command" 0 GGUF_VALIDATE_PATHS="my models/tiny llama.gguf" \
        GGUF_VALIDATE_BIN="$installed"
    # auto, where no Python 3.11 can install the wheel: the binary.
    mkdir -p "$work/nopython"
    printf '#!/bin/sh\nexit 1\n' >"$work/nopython/python3"
    chmod +x "$work/nopython/python3"
    name="install: auto without Python 3.11"
    check "$name: falls back to the released binary" quiet env -i PATH="$work/nopython:$PATH" RUNNER_TEMP="$work/b2" \
        GITHUB_ACTION_PATH="$root" GGUF_VALIDATE_RELEASE_URL="file://$release" bash "$run_sh" install
    check "$name: installed it" test -x "$work/b2/gguf-validate/bin/gguf-validate"
    check "$name: no virtual environment was made" test ! -e "$work/b2/gguf-validate/venv"
    name="install: auto without Python and without a release"
    : >"$work/s"
    rc=0
    env -i PATH="$work/nopython:$PATH" RUNNER_TEMP="$work/b3" GITHUB_STEP_SUMMARY="$work/s" GITHUB_ACTION_PATH="$root" \
        GGUF_VALIDATE_RELEASE_URL="file://$work/no-such-release" bash "$run_sh" install >/dev/null 2>&1 || rc=$?
    check "$name: is refused (exit 2), not compiled" test "$rc" = 2
    summary=$work/s
    summary_has "$name" "set install: cargo to compile it"
    name="install: binary whose archive is not the published one"
    printf 'tampered' >>"$release/$asset.tar.gz"
    : >"$work/s"
    rc=0
    env -i PATH="$PATH" RUNNER_TEMP="$work/b4" GITHUB_STEP_SUMMARY="$work/s" GITHUB_ACTION_PATH="$root" \
        GGUF_VALIDATE_RELEASE_URL="file://$release" GGUF_VALIDATE_INSTALL=binary bash "$run_sh" install >/dev/null 2>&1 || rc=$?
    check "$name: is refused (exit 2)" test "$rc" = 2
    check "$name: nothing was installed" test ! -e "$work/b4/gguf-validate/bin/gguf-validate"
    summary=$work/s
    summary_has "$name" "SHA-256 is not the published one"
else
    skipped=$((skipped + 1))
    echo "skip (e): not Linux x86_64, or no curl"
fi

echo
echo "== what a run shows on hostile inputs (log, then job summary):"
for c in "$hostile_case" "$hostile_args_case"; do
    sed 's/^/  | /' "$c/log"
    sed 's/^/  > /' "$c/step_summary"
done
echo
if [ "$skipped" -gt 0 ]; then
    echo "$passed passed, $failed failed, $skipped skipped"
else
    echo "$passed passed, $failed failed"
fi
[ "$failed" -eq 0 ]
