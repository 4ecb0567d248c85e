#!/usr/bin/env bash
# The steps of the composite action (action.yml), kept here so that they can
# be linted and run locally (.ci/action/test.sh does).
#
#   run.sh install         install gguf-validate, in this order: the released
#                          wheel of this action's version (pip, into a virtual
#                          environment, binary only, its SHA-256 checked by
#                          pip), else the released standalone binary for the
#                          runner (its published SHA-256 checked); with cargo
#                          install from this checkout only when asked
#   run.sh validate        validate, annotate, write the job summary and outputs
#   run.sh upload-failed   explain a failed SARIF upload in the job summary
#
# Everything comes from the environment, never from text spliced into a
# script, so a path or an argument is data whatever it contains:
#   GGUF_VALIDATE_PATHS         files or directories, one per line
#   GGUF_VALIDATE_PROFILE       "", strict, spec or ggml
#   GGUF_VALIDATE_LLAMA_CPP     "", a llama.cpp release (b4600) or a window (b4600..)
#   GGUF_VALIDATE_LOADER        "", llama.cpp, sd.cpp or comfyui-gguf
#   GGUF_VALIDATE_FIX           false (default), true (safe fixes) or unsafe
#   GGUF_VALIDATE_ARGS          further arguments, one per line
#   GGUF_VALIDATE_SARIF_UPLOAD  auto, true or false
#   GGUF_VALIDATE_PR_HEAD_REPO  owner/name of a pull request's head repository
#   GGUF_VALIDATE_BIN           a gguf-validate binary to use instead of
#                               installing one (the local tests set it)
#   GGUF_VALIDATE_INSTALL       auto (default: wheel, else binary), wheel,
#                               binary, or cargo (compiles: needs a Rust
#                               toolchain; only when asked)
#   GGUF_VALIDATE_RELEASE_URL   where the release's binaries are (default: the
#                               GitHub release of this action's version)
#   GGUF_VALIDATE_WHEEL         a wheel file to install instead of PyPI's
#   GGUF_VALIDATE_WHEEL_SHA256  the SHA-256 that wheel must have
# and the runner's RUNNER_TEMP, GITHUB_OUTPUT, GITHUB_STEP_SUMMARY,
# GITHUB_ACTION_PATH, GITHUB_REPOSITORY, GITHUB_ACTOR.
#
# validate exits with gguf-validate's own exit code (0 every file valid, 1 some
# file invalid, 2 unreadable file or usage error), or 2 when there is nothing
# to validate or an input is wrong.
set -euo pipefail

: "${RUNNER_TEMP:?RUNNER_TEMP is not set (run.sh expects the runner environment)}"
install_root="$RUNNER_TEMP/gguf-validate"
bin="${GGUF_VALIDATE_BIN:-$install_root/bin/gguf-validate}"

# A workflow command that GitHub shows as an annotation; the message is
# escaped as the runner expects (%, CR, LF).
annotate() {
    local level=$1 msg=$2
    msg=${msg//'%'/'%25'}
    msg=${msg//$'\r'/'%0D'}
    msg=${msg//$'\n'/'%0A'}
    printf '::%s title=gguf-validate::%s\n' "$level" "$msg"
}

summary() {
    if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then
        printf '%s\n' "$@" >>"$GITHUB_STEP_SUMMARY"
    fi
}

output() {
    if [ -n "${GITHUB_OUTPUT:-}" ]; then
        printf '%s=%s\n' "$1" "$2" >>"$GITHUB_OUTPUT"
    fi
}

# Fail the step before the tool runs: annotation, summary line, exit 2.
refuse() {
    annotate error "$1"
    summary "### gguf-validate" "" ":x: $1"
    exit 2
}

# Split $1 into the global array `lines`: one element per line, leading and
# trailing blanks dropped, empty lines skipped. (Bash 3.2 compatible, like the
# rest: macOS's /bin/bash.)
split_lines() {
    local line
    lines=()
    while IFS= read -r line || [ -n "$line" ]; do
        line=${line%$'\r'}
        line="${line#"${line%%[![:space:]]*}"}"
        line="${line%"${line##*[![:space:]]}"}"
        if [ -n "$line" ]; then lines+=("$line"); fi
    done <<<"$1"
}

# The value of attribute $2 on the first <testsuites> element of JUnit file $1.
junit_total() {
    sed -n "s/.*<testsuites[^>]* $2=\"\\([0-9][0-9]*\\)\".*/\\1/p" "$1" | head -n 1
}

# The action's own version: the workspace's (the wheel of the same tag).
action_version() {
    sed -n 's/^version = "\(.*\)"$/\1/p' "$GITHUB_ACTION_PATH/Cargo.toml" | head -n 1
}

# The wheel into a virtual environment under RUNNER_TEMP: a pinned version
# from PyPI (pip checks the SHA-256 the index lists for the file, and
# never builds from source), or GGUF_VALIDATE_WHEEL checked against
# GGUF_VALIDATE_WHEEL_SHA256.
install_wheel() {
    local req
    command -v python3 >/dev/null 2>&1 ||
        refuse "python3 is not on PATH: add actions/setup-python (3.11 or newer) before this action, or set install: cargo"
    python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))' ||
        refuse "the gguf-validate wheel needs Python 3.11 or newer (found $(python3 --version 2>&1)): add actions/setup-python, or set install: cargo"
    if [ -n "${GGUF_VALIDATE_WHEEL:-}" ]; then
        if [ -n "${GGUF_VALIDATE_WHEEL_SHA256:-}" ]; then
            printf '%s  %s\n' "$GGUF_VALIDATE_WHEEL_SHA256" "$GGUF_VALIDATE_WHEEL" | sha256sum -c --quiet - ||
                refuse "the wheel's SHA-256 is not the expected one: not installed"
        fi
        req=$GGUF_VALIDATE_WHEEL
    else
        : "${GITHUB_ACTION_PATH:?GITHUB_ACTION_PATH is not set}"
        req="gguf-validate==$(action_version)"
    fi
    python3 -m venv "$install_root/venv"
    if ! "$install_root/venv/bin/python" -m pip install --disable-pip-version-check --quiet --only-binary :all: "$req"; then
        # Under `auto` the released binary is tried next.
        if [ -n "${GGUF_VALIDATE_WHEEL_SOFT:-}" ]; then
            rm -rf "$install_root/venv"
            return 1
        fi
        refuse "pip could not install $req (set install: binary or install: cargo instead)"
    fi
    mkdir -p "$install_root/bin"
    ln -sf "$install_root/venv/bin/gguf-validate" "$install_root/bin/gguf-validate"
    "$install_root/bin/gguf-validate" --version
}

# The release's standalone binary for this runner (its archive and
# `.sha256` from the GitHub release of this action's version, or from
# GGUF_VALIDATE_RELEASE_URL), the archive's SHA-256 checked before it is
# unpacked. Returns 1 (after a notice) when there is none to be had, so
# `auto` can say why nothing was installed.
install_binary() {
    local os arch target archive base name tmp sum_line
    os=$(uname -s)
    arch=$(uname -m)
    case "$os/$arch" in
        Linux/x86_64 | Linux/amd64) target=x86_64-unknown-linux-musl archive=tar.gz ;;
        Linux/aarch64 | Linux/arm64) target=aarch64-unknown-linux-musl archive=tar.gz ;;
        Darwin/x86_64) target=x86_64-apple-darwin archive=tar.gz ;;
        Darwin/arm64) target=aarch64-apple-darwin archive=tar.gz ;;
        MINGW*/x86_64 | MSYS*/x86_64 | CYGWIN*/x86_64) target=x86_64-pc-windows-msvc archive=zip ;;
        *)
            echo "::notice title=gguf-validate::no released binary for $os/$arch"
            return 1
            ;;
    esac
    : "${GITHUB_ACTION_PATH:?GITHUB_ACTION_PATH is not set}"
    base=${GGUF_VALIDATE_RELEASE_URL:-https://github.com/gguf-validate/gguf-validate/releases/download/v$(action_version)}
    name="gguf-validate-v$(action_version)-$target"
    # (Called as `install_binary || ...`, where `set -e` does not apply:
    # every step is checked.)
    mkdir -p "$RUNNER_TEMP" && tmp=$(mktemp -d "$RUNNER_TEMP/gguf-validate-download.XXXXXX") || {
        echo "::notice title=gguf-validate::no temporary folder under $RUNNER_TEMP"
        return 1
    }
    if ! command -v curl >/dev/null 2>&1; then
        echo "::notice title=gguf-validate::curl is not on PATH: cannot download the released binary"
        return 1
    fi
    if ! curl -fsSL --retry 3 --max-time 300 -o "$tmp/$name.$archive" "$base/$name.$archive" ||
        ! curl -fsSL --retry 3 --max-time 60 -o "$tmp/$name.$archive.sha256" "$base/$name.$archive.sha256"; then
        echo "::notice title=gguf-validate::could not download $name.$archive and its .sha256 from $base"
        return 1
    fi
    # The checksum file names the archive; only its first field is used.
    sum_line="$(cut -d' ' -f1 <"$tmp/$name.$archive.sha256")  $tmp/$name.$archive"
    if command -v sha256sum >/dev/null 2>&1; then
        printf '%s\n' "$sum_line" | sha256sum -c --quiet - ||
            refuse "the released binary's SHA-256 is not the published one: not installed"
    else
        printf '%s\n' "$sum_line" | shasum -a 256 -c --quiet - ||
            refuse "the released binary's SHA-256 is not the published one: not installed"
    fi
    local unpacked=false
    if [ "$archive" = zip ]; then
        (cd "$tmp" && unzip -q "$name.zip") && mkdir -p "$install_root/bin" &&
            cp "$tmp/$name/gguf-validate.exe" "$install_root/bin/gguf-validate.exe" &&
            ln -sf "$install_root/bin/gguf-validate.exe" "$install_root/bin/gguf-validate" && unpacked=true
    else
        tar -xzf "$tmp/$name.tar.gz" -C "$tmp" && mkdir -p "$install_root/bin" &&
            cp "$tmp/$name/gguf-validate" "$install_root/bin/gguf-validate" &&
            chmod +x "$install_root/bin/gguf-validate" && unpacked=true
    fi
    rm -rf "$tmp"
    if [ "$unpacked" != true ]; then
        echo "::notice title=gguf-validate::$name.$archive did not unpack to gguf-validate"
        return 1
    fi
    "$install_root/bin/gguf-validate" --version
}

# Whether the wheel can be installed here: Python 3.11 or newer.
wheel_possible() {
    command -v python3 >/dev/null 2>&1 && python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null
}

install_cargo() {
    : "${GITHUB_ACTION_PATH:?GITHUB_ACTION_PATH is not set}"
    if ! command -v cargo >/dev/null 2>&1; then
        refuse "cargo is not on PATH: install: cargo builds gguf-validate with cargo install; add a Rust toolchain step (e.g. dtolnay/rust-toolchain@stable) before it"
    fi
    cargo install --locked --path "$GITHUB_ACTION_PATH/parser/cli" --root "$install_root"
}

cmd_install() {
    if [ -n "${GGUF_VALIDATE_BIN:-}" ]; then
        echo "GGUF_VALIDATE_BIN is set: using $GGUF_VALIDATE_BIN, nothing to install"
        return 0
    fi
    case "${GGUF_VALIDATE_INSTALL:-auto}" in
        auto)
            # The pinned wheel, else the released binary, checksum checked;
            # never a compile unless asked (install: cargo).
            if wheel_possible && GGUF_VALIDATE_WHEEL_SOFT=1 install_wheel; then
                return 0
            fi
            echo "the wheel could not be installed here: trying the released binary"
            install_binary ||
                refuse "neither the wheel (needs Python 3.11 or newer: actions/setup-python) nor a released binary for this runner could be installed; set install: cargo to compile it"
            ;;
        wheel) install_wheel ;;
        binary) install_binary || refuse "the released binary could not be installed (see the notice above)" ;;
        cargo) install_cargo ;;
        *) refuse "input install must be auto, wheel, binary or cargo" ;;
    esac
}

cmd_validate() {
    local paths=() args=() profile_args=() llama_args=() loader_args=()
    split_lines "${GGUF_VALIDATE_PATHS:-}"
    if [ "${#lines[@]}" -gt 0 ]; then paths=("${lines[@]}"); fi
    split_lines "${GGUF_VALIDATE_ARGS:-}"
    if [ "${#lines[@]}" -gt 0 ]; then args=("${lines[@]}"); fi

    local profile=${GGUF_VALIDATE_PROFILE:-}
    case $profile in
        "") ;;
        strict | spec | ggml) profile_args=(--profile "$profile") ;;
        *) refuse "input profile must be strict, spec or ggml (or empty), not '$profile'" ;;
    esac
    # One argument, whatever it holds: the tool refuses a name it does not know.
    if [ -n "${GGUF_VALIDATE_LLAMA_CPP:-}" ]; then
        llama_args=("--llama-cpp=$GGUF_VALIDATE_LLAMA_CPP")
    fi
    local loader=${GGUF_VALIDATE_LOADER:-}
    case $loader in
        "") ;;
        llama.cpp | sd.cpp | comfyui-gguf) loader_args=("--loader=$loader") ;;
        *) refuse "input loader must be llama.cpp, sd.cpp or comfyui-gguf (or empty), not '$loader'" ;;
    esac

    local fix=${GGUF_VALIDATE_FIX:-false} fix_args=()
    case $fix in
        "" | false) fix=false ;;
        true) fix_args=(--in-place) ;;
        unsafe) fix_args=(--in-place --unsafe) ;;
        *) refuse "input fix must be false, true or unsafe, not '$fix'" ;;
    esac

    local upload_mode=${GGUF_VALIDATE_SARIF_UPLOAD:-auto} upload=false reason
    case $upload_mode in
        false) reason="off (\`sarif-upload: false\`)" ;;
        true) upload=true reason="uploaded by the next step (\`sarif-upload: true\`)" ;;
        auto)
            if [ -n "${GGUF_VALIDATE_PR_HEAD_REPO:-}" ] &&
                [ "$GGUF_VALIDATE_PR_HEAD_REPO" != "${GITHUB_REPOSITORY:-}" ]; then
                reason="skipped: pull request from another repository (its token cannot write security events)"
            elif [ -n "${GGUF_VALIDATE_PR_HEAD_REPO:-}" ] && [ "${GITHUB_ACTOR:-}" = "dependabot[bot]" ]; then
                reason="skipped: Dependabot pull request (read-only token)"
            else
                upload=true reason="uploaded by the next step (\`sarif-upload: auto\`)"
            fi
            ;;
        *) refuse "input sarif-upload must be auto, true or false, not '$upload_mode'" ;;
    esac

    if [ "${#paths[@]}" -eq 0 ]; then
        refuse "input paths is empty: give files or directories, one per line"
    fi

    # fix: the files fixed in place first (each only once its fixed copy is
    # complete and validated), then validated as always: what is left fails.
    if [ "$fix" != false ]; then
        local targets=() p fixed_count
        for p in "${paths[@]}"; do
            if [ -d "$p" ]; then
                while IFS= read -r -d '' f; do targets+=("$f"); done < <(find "$p" -type f -name '*.gguf' -print0 | sort -z)
            elif [ -e "$p" ]; then
                targets+=("$p")
            fi
        done
        if [ "${#targets[@]}" -gt 0 ]; then
            local fix_log
            fix_log=$(mktemp "$RUNNER_TEMP/gguf-validate-fix.XXXXXX")
            "$bin" fix "${fix_args[@]}" ${profile_args[@]+"${profile_args[@]}"} ${loader_args[@]+"${loader_args[@]}"} \
                -- "${targets[@]}" >"$fix_log" 2>&1 || true
            cat "$fix_log"
            fixed_count=$(grep -c '^fixed: ' "$fix_log" || true)
            output fixed "$fixed_count"
            summary "**fix:** $fixed_count of ${#targets[@]} file(s) fixed in place (\`fix: $fix\`); the validation below is of the fixed files."
        else
            output fixed 0
        fi
    fi

    local report_dir sarif junit
    mkdir -p "$RUNNER_TEMP"
    report_dir=$(mktemp -d "$RUNNER_TEMP/gguf-validate-report.XXXXXX")
    sarif="$report_dir/gguf-validate.sarif"
    junit="$report_dir/gguf-validate.junit.xml"

    # `--` before the paths: a path such as `-x.gguf` or `dump` is a path.
    local rc=0
    # (`${a[@]+"${a[@]}"}`: an empty array under `set -u` in bash < 4.4.)
    "$bin" ${profile_args[@]+"${profile_args[@]}"} ${llama_args[@]+"${llama_args[@]}"} ${loader_args[@]+"${loader_args[@]}"} --format github \
        --output-sarif "$sarif" --output-junit "$junit" \
        ${args[@]+"${args[@]}"} -- "${paths[@]}" || rc=$?
    output exit-code "$rc"

    local files="" invalid="" unreadable="" skipped="" valid=""
    if [ -s "$junit" ]; then
        files=$(junit_total "$junit" tests)
        invalid=$(junit_total "$junit" failures)
        unreadable=$(junit_total "$junit" errors)
        skipped=$(junit_total "$junit" skipped)
    fi
    if [ -n "$files" ] && [ -n "$invalid" ] && [ -n "$unreadable" ]; then
        valid=$((files - invalid - unreadable - ${skipped:-0}))
        output files "$files"
        output valid "$valid"
        output invalid "$invalid"
        output unreadable "$unreadable"
    fi

    # Nothing validated is a failure, not a pass (gguf-validate exits 2
    # itself; an older one exited 0): a report of no file, with exit 0 or 2.
    local nothing=false
    if [ -n "$files" ] && [ "$files" -eq 0 ] && { [ "$rc" -eq 0 ] || [ "$rc" -eq 2 ]; }; then
        nothing=true
        rc=2
        annotate error "nothing was validated: no GGUF file found under the given paths"
    fi

    if [ -s "$sarif" ]; then
        output sarif "$sarif"
    else
        upload=false reason="no SARIF report was written"
    fi
    output upload "$upload"

    local verdict
    if $nothing; then
        verdict=":x: nothing was validated: no GGUF file found under the given paths (exit 2)"
    elif [ "$rc" -eq 0 ]; then
        verdict=":white_check_mark: every file is valid"
    elif [ -n "$valid" ]; then
        verdict=":x: $invalid invalid, $unreadable unreadable (exit $rc)"
    else
        verdict=":x: gguf-validate stopped before validating (exit $rc): see the step's log"
    fi
    summary "### gguf-validate" "" "$verdict" ""
    if [ -n "$valid" ]; then
        summary "| Files | Valid | Invalid | Unreadable |" "| ---: | ---: | ---: | ---: |" \
            "| $files | $valid | $invalid | $unreadable |" ""
        if [ "${skipped:-0}" -gt 0 ]; then summary "Skipped: $skipped" ""; fi
        summary "Profile: ${profile:-from gguf-validate.toml, else strict}. A split set counts once more, as a whole. The findings are annotations in this run's log."
    else
        summary "No report was written."
    fi
    summary "" "SARIF upload: $reason."
    echo "gguf-validate: exit $rc${valid:+; $files files: $valid valid, $invalid invalid, $unreadable unreadable}"
    return "$rc"
}

cmd_upload_failed() {
    annotate warning "the SARIF upload to code scanning failed; the validation result stands. Uploading needs 'permissions: security-events: write' and code scanning enabled; set 'sarif-upload: false' to skip it"
    summary "" ":warning: The SARIF upload failed (see the upload step): it needs \`permissions: security-events: write\` and code scanning enabled for the repository. Set \`sarif-upload: false\` to skip it. The validation result above stands."
}

case ${1:-} in
    install) cmd_install ;;
    validate) cmd_validate ;;
    upload-failed) cmd_upload_failed ;;
    *)
        echo "usage: run.sh install|validate|upload-failed" >&2
        exit 2
        ;;
esac
