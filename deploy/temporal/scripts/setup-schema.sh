#!/bin/sh
# Creates Temporal's databases and schema with temporal-sql-tool (from the admin-tools image), and the empty
# database of silico's results store, whose tables silico creates and migrates itself. Safe to run on every
# start: existing databases are kept and the schema only moves forward.
#
# The compose file sets the first four variables; the others default to what the admin-tools image and the
# server image use, and let the script run outside the image (the tests run it against a local PostgreSQL):
#   POSTGRES_SEEDS, DB_PORT (5432), POSTGRES_USER   where PostgreSQL is and as whom; the password in SQL_PASSWORD
#   DBNAME (temporal), VISIBILITY_DBNAME (temporal_visibility)   Temporal's two databases, named as the server
#                                                                 image's variables name them
#   SILICO_DBNAME (silico)                           the results store's database
#   TEMPORAL_SQL_TOOL (temporal-sql-tool)            the schema tool
#   SCHEMA_DIR (/etc/temporal/schema/postgresql/v12) Temporal's schema files for PostgreSQL 12 and later
set -eu
: "${POSTGRES_SEEDS:?}" "${POSTGRES_USER:?}"
port=${DB_PORT:-5432}
tool=${TEMPORAL_SQL_TOOL:-temporal-sql-tool}
schema=${SCHEMA_DIR:-/etc/temporal/schema/postgresql/v12}
sql() { "$tool" --plugin postgres12 --ep "$POSTGRES_SEEDS" -p "$port" -u "$POSTGRES_USER" "$@"; }

for pair in "${DBNAME:-temporal}:temporal" "${VISIBILITY_DBNAME:-temporal_visibility}:visibility"; do
  db=${pair%:*}
  dir=$schema/${pair##*:}/versioned
  sql --db "$db" create || true   # fails only when it exists
  sql --db "$db" setup-schema -v 0.0
  sql --db "$db" update-schema -d "$dir"
done
sql --db "${SILICO_DBNAME:-silico}" create || true
echo "schema ready"
