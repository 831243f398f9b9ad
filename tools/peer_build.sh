# Sourced by the peer builds (tools/llamacpp/build.sh, tools/ikllamacpp/build.sh): the cached
# bin directory, one build per cache directory at a time, and a logged command. The caller
# sets TARGETS, BIN_DIR, PREFIX, FORCE (1: rebuild) and defines log.

# Whether every target is built (and the build finished: the stamp is written last).
have_all_binaries() {
    [[ -f "$BIN_DIR/.kite-build-complete" ]] || return 1
    local t
    for t in "${TARGETS[@]}"; do
        [[ -x "$BIN_DIR/$t" ]] || return 1
    done
}

# Prints BIN_DIR and exits when the build is cached; else takes the cache directory's lock,
# and exits the same way if a concurrent run finished the build meanwhile.
reuse_or_lock() {
    local what="$1"
    if [[ "$FORCE" != "1" ]] && have_all_binaries; then
        log "$what already built in $BIN_DIR"
        echo "$BIN_DIR"
        exit 0
    fi
    mkdir -p "$PREFIX"
    exec 9>"$PREFIX/.lock"
    command -v flock >/dev/null 2>&1 || return 0
    if ! flock -n 9; then
        log "another build holds $PREFIX/.lock; waiting"
        flock 9
    fi
    if [[ "$FORCE" != "1" ]] && have_all_binaries; then
        log "$what already built in $BIN_DIR (by a concurrent run)"
        echo "$BIN_DIR"
        exit 0
    fi
}

# run_logged CMD...: CMD's output goes to LOG_FILE; on failure its last lines to stderr.
run_logged() {
    if ! "$@" >>"$LOG_FILE" 2>&1; then
        log "command failed: $*"
        log "last lines of $LOG_FILE:"
        tail -n 40 "$LOG_FILE" >&2
        exit 1
    fi
}
