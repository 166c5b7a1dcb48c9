#!/bin/sh
# Waits for the Temporal server, creates the namespace, and registers the search attributes silico uses
# (workflows.SearchAttributes: SilicoExperiment and SilicoSpecHash, both Keyword). Safe to run on every start.
set -eu
ns=${TEMPORAL_NAMESPACE:-default}
tries=0
until temporal operator cluster health >/dev/null 2>&1; do
  tries=$((tries + 1))
  [ "$tries" -lt 60 ] || { echo "Temporal at $TEMPORAL_ADDRESS is not healthy" >&2; exit 1; }
  sleep 2
done
temporal operator namespace describe --namespace "$ns" >/dev/null 2>&1 ||
  temporal operator namespace create --namespace "$ns" --retention 30d
for attr in SilicoExperiment SilicoSpecHash; do
  if ! temporal operator search-attribute list --namespace "$ns" | grep -q "$attr"; then
    temporal operator search-attribute create --namespace "$ns" --name "$attr" --type Keyword
  fi
done
echo "namespace $ns ready with silico's search attributes"
