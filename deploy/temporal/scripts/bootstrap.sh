#!/bin/sh
# Waits for the Temporal server, creates the namespace, and registers the search attributes silico uses
# (wire.SearchAttributes: SilicoExperiment and SilicoSpecHash, both Keyword). Safe to run on every start,
# and it succeeds on its own first run: no restart policy has to run it again.
#
#   TEMPORAL_ADDRESS     the frontend, read by the temporal CLI
#   TEMPORAL_NAMESPACE   the namespace (default)
#   TEMPORAL_CLI         the temporal CLI (temporal); any program with the same `operator` commands will do
#   BOOTSTRAP_TIMEOUT    seconds the whole script may wait for the server (300)
#
# A namespace just created is not served at once: the server's frontend and history find it only when their
# namespace cache refreshes (every 10 s by default), and until then they answer "Namespace ... is not found". So
# every step after the server is up is tried again, every 2 s, until it succeeds or the deadline passes.
set -eu
ns=${TEMPORAL_NAMESPACE:-default}
cli=${TEMPORAL_CLI:-temporal}
timeout=${BOOTSTRAP_TIMEOUT:-300}
deadline=$(($(date +%s) + timeout))
out=$(mktemp)
trap 'rm -f "$out"' EXIT

# retry WHAT CMD...: runs CMD until it succeeds, its output in $out; at the deadline, exits with WHAT and the
# last error.
retry() {
  what=$1
  shift
  waited=false
  until "$@" >"$out" 2>&1; do
    if [ "$(date +%s)" -ge "$deadline" ]; then
      echo "bootstrap: gave up after ${timeout}s waiting for $what at ${TEMPORAL_ADDRESS:-the default address}; last error:" >&2
      cat "$out" >&2
      exit 1
    fi
    if [ "$waited" = false ]; then
      echo "bootstrap: waiting for $what ($(head -c 300 "$out" | tr '\n' ' '))"
      waited=true
    fi
    sleep 2
  done
}

# has_attr NAME: the namespace lists search attribute NAME.
has_attr() {
  "$cli" operator search-attribute list --namespace "$ns" >"$out.list" 2>&1 || { cat "$out.list" >&2; rm -f "$out.list"; return 2; }
  found=1
  grep -qw "$1" "$out.list" && found=0
  rm -f "$out.list"
  return $found
}

# ensure_attr NAME: lists the attributes and creates NAME when it is missing; fails (to be tried again) when the
# server does not serve the namespace yet or refuses.
ensure_attr() {
  has_attr "$1" && return 0
  [ $? -eq 1 ] || return 1
  "$cli" operator search-attribute create --namespace "$ns" --name "$1" --type Keyword
}

# ensure_namespace: creates the namespace unless it exists (describe reads the database, not the cache).
ensure_namespace() {
  "$cli" operator namespace describe --namespace "$ns" >/dev/null 2>&1 ||
    "$cli" operator namespace create --namespace "$ns" --retention 30d
}

retry "the Temporal server to be healthy" "$cli" operator cluster health
retry "namespace $ns to be created" ensure_namespace
for attr in SilicoExperiment SilicoSpecHash; do
  retry "namespace $ns to be served and search attribute $attr registered" ensure_attr "$attr"
done
echo "namespace $ns ready with silico's search attributes"
