#!/bin/sh
# Creates Temporal's databases and schema with temporal-sql-tool (from the admin-tools image), and the empty
# database of silico's results store, whose tables silico creates and migrates itself. Safe to run on every
# start: existing databases are kept and the schema only moves forward.
set -eu
: "${POSTGRES_SEEDS:?}" "${POSTGRES_USER:?}"
port=${DB_PORT:-5432}
sql() { temporal-sql-tool --plugin postgres12 --ep "$POSTGRES_SEEDS" -p "$port" -u "$POSTGRES_USER" "$@"; }

schema=/etc/temporal/schema/postgresql/v12
for db in temporal temporal_visibility; do
  case $db in
    temporal) dir=$schema/temporal/versioned ;;
    *) dir=$schema/visibility/versioned ;;
  esac
  sql --db "$db" create || true   # fails only when it exists
  sql --db "$db" setup-schema -v 0.0
  sql --db "$db" update-schema -d "$dir"
done
sql --db silico create || true
echo "schema ready"
