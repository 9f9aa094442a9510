# shellcheck shell=bash
# Sourced by .ci/test, .ci/book and .ci/lab: make the project-local virtual environment
# .venv and put it first on PATH.
#
# - Creates .venv with python3.11 (or python3 if that is >= 3.11), upgrades pip in it and
#   runs `pip install -e ".[EXTRAS]"` with the caller's DUALARR_EXTRAS: the learner's
#   `widgets,symbolic` for .ci/lab (plus `vml` with DUALARR_VML=1), everything
#   (`widgets,symbolic,book,dev,vml,classroom,dask`) for .ci/test and .ci/book (the default).
# - Skips the install when .venv/.dualarr-stamp holds the sha256 of pyproject.toml and
#   extras that include the wanted ones, so a second run takes well under two seconds.
#   Delete the stamp (or .venv) to force one.
# - Makes sure graphviz's `dot` exists, and Chromium where the `dev` extra is wanted (the
#   real-browser tests): as root it apt-installs Debian's graphviz, chromium and
#   fonts-liberation (log in .venv/apt.log), waiting up to 10 minutes
#   for the dpkg lock when another apt-get holds it (apt's DPkg::Lock::Timeout); otherwise
#   it prints a hint and goes on. DUALARR_SKIP_APT=1 skips that step.
# Returns non-zero (never exits the caller's shell) when the install fails.

# `apt-get update`, retried every 5 s for up to 10 minutes while another process holds
# the package lists' lock ("Could not get lock").
_dualarr_apt_update() {
    local tries=0 out
    while true; do
        out="$(apt-get update -q 2>&1)" && { echo "$out"; return 0; }
        echo "$out"
        if ! grep -q "Could not get lock" <<<"$out" || [ $tries -ge 120 ]; then
            return 1
        fi
        tries=$((tries + 1))
        echo "setup: waiting for apt's lock (try $tries)"
        sleep "${DUALARR_APT_RETRY_SECONDS:-5}"
    done
}

_dualarr_setup() {
    local root venv stamp want have py log
    root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)" || return 1
    venv="$root/.venv"
    stamp="$venv/.dualarr-stamp"
    log="$venv/pip-install.log"

    py="${DUALARR_PYTHON:-python3.11}"
    if ! command -v "$py" >/dev/null 2>&1; then
        py=python3
    fi
    if ! "$py" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
        echo "setup: need Python >= 3.11 (python3.11 or python3); set DUALARR_PYTHON" >&2
        return 1
    fi

    local extras="${DUALARR_EXTRAS:-widgets,symbolic,book,dev,vml,classroom,dask}"
    if [ "${DUALARR_VML:-0}" = "1" ]; then
        extras="$extras,vml"
    fi
    want="$(sha256sum "$root/pyproject.toml" | cut -d' ' -f1)" || return 1
    have=""
    if [ -x "$venv/bin/python" ] && [ -f "$stamp" ]; then
        have="$(cat "$stamp")"
    fi
    # the stamp is "<sha256 of pyproject.toml> <installed extras>"
    local installed=""
    if [ "${have%% *}" = "$want" ] && [ "$have" != "$want" ]; then
        installed="${have#* }"
    fi
    extras="$(tr ',' '\n' <<<"$installed,$extras" | sed '/^$/d' | sort -u | paste -sd, -)"

    if [ "$have" = "$want $extras" ]; then
        echo "setup: .venv is up to date with pyproject.toml (extras: $extras)"
    else
        local t0=$SECONDS
        if [ ! -x "$venv/bin/python" ]; then
            echo "setup: creating .venv with $("$py" --version 2>&1)"
            "$py" -m venv "$venv" || return 1
        fi
        rm -f "$stamp"
        echo "setup: installing dualarr[$extras] into .venv (log: .venv/pip-install.log)"
        {
            "$venv/bin/python" -m pip install --disable-pip-version-check --upgrade pip &&
                (cd "$root" && "$venv/bin/python" -m pip install --disable-pip-version-check \
                    -e ".[$extras]")
        } >"$log" 2>&1
        local rc=$?
        if [ $rc -ne 0 ]; then
            echo "setup: pip install failed (exit $rc); last lines of .venv/pip-install.log:" >&2
            tail -n 30 "$log" >&2
            return 1
        fi
        echo "$want $extras" >"$stamp"
        echo "setup: installed in $((SECONDS - t0)) s"
    fi

    # Debian packages: graphviz (drawings) and, for the tests, chromium (the real-browser
    # widget tests).
    local missing=()
    command -v dot >/dev/null 2>&1 || missing+=(graphviz)
    if [[ ",$extras," == *",dev,"* ]]; then
        command -v chromium >/dev/null 2>&1 || missing+=(chromium fonts-liberation)
    fi
    if [ ${#missing[@]} -gt 0 ]; then
        if [ "${DUALARR_SKIP_APT:-0}" = "1" ]; then
            echo "setup: not installing ${missing[*]} (DUALARR_SKIP_APT=1): drawings or the browser test may be skipped"
        elif [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
            local alog="$venv/apt.log"
            # Another apt-get (a fresh machine's own updates) may hold apt's locks: wait for
            # them, up to 10 minutes each, instead of failing at once. `install` waits for
            # the dpkg lock itself (DPkg::Lock::Timeout); `update` ignores that option for
            # the package lists' lock (apt 2.6), so it is retried while that lock is held.
            echo "setup: apt-get install ${missing[*]} (waits up to 10 min for apt's locks)"
            if { _dualarr_apt_update &&
                DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install \
                    -y -q --no-install-recommends "${missing[@]}"
            } >"$alog" 2>&1; then
                echo "setup: installed ${missing[*]} with apt-get"
            else
                echo "setup: apt-get install ${missing[*]} failed (see .venv/apt.log)" >&2
            fi
        else
            echo "setup: ${missing[*]} not found; install them (e.g. sudo apt-get install ${missing[*]})"
        fi
    fi

    export VIRTUAL_ENV="$venv"
    case ":$PATH:" in
        *":$venv/bin:"*) ;;
        *) export PATH="$venv/bin:$PATH" ;;
    esac
    return 0
}

_dualarr_setup
