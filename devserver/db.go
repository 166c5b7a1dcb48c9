package devserver

import (
	"context"
	stdsql "database/sql"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"

	commonpb "go.temporal.io/api/common/v1"
	enums "go.temporal.io/api/enums/v1"
	"go.temporal.io/server/common/config"
	serverlog "go.temporal.io/server/common/log"
	"go.temporal.io/server/common/metrics"
	"go.temporal.io/server/common/persistence/serialization"
	"go.temporal.io/server/common/persistence/sql"
	"go.temporal.io/server/common/persistence/sql/sqlplugin"
	sqliteplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/sqlite"
	"go.temporal.io/server/common/primitives/timestamp"
	"go.temporal.io/server/common/resolver"
	"go.temporal.io/server/common/searchattribute/sadefs"
	sqliteschema "go.temporal.io/server/schema/sqlite"
)

// prepareFile returns the configuration of the SQLite file at path, creating
// the file with the server's schema if it does not exist.
//
// The schema is written to a side file that is renamed into place once
// complete, so a crash during setup never leaves a half-built database at path.
// The side file uses SQLite's rollback journal, so every committed page is in
// the file itself when it is renamed.
func prepareFile(path string) (*config.SQL, error) {
	switch _, err := os.Stat(path); {
	case err == nil:
		return fileSQLConfig(path, true), nil
	case !errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("database file: %w", err)
	}

	tmp := path + ".init"
	for _, f := range []string{tmp, tmp + "-journal"} {
		if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("remove partial database: %w", err)
		}
	}
	if err := sqliteschema.SetupSchema(fileSQLConfig(tmp, false)); err != nil {
		return nil, fmt.Errorf("set up schema in %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return nil, fmt.Errorf("install database: %w", err)
	}
	return fileSQLConfig(path, true), nil
}

// fileSQLConfig returns the SQLite configuration of the file at path. With
// wal, the write-ahead log lets readers run beside the writer and makes each
// commit one append; busy_timeout rides out brief lock contention.
func fileSQLConfig(path string, wal bool) *config.SQL {
	attrs := map[string]string{"mode": "rwc", "busy_timeout": "10000"}
	if wal {
		attrs["journal_mode"] = "wal"
	}
	return &config.SQL{
		PluginName:        sqliteplugin.PluginName,
		DatabaseName:      path,
		ConnectAttributes: attrs,
	}
}

// ensureNamespace registers namespace in the database unless it exists, then
// adds the search attributes it lacks. It runs before the server starts, so no
// server cache can hold a stale view of the namespace.
func ensureNamespace(ctx context.Context, cfg *config.SQL, namespace string, attrs map[string]enums.IndexedValueType) error {
	db, err := sql.NewSQLDB(sqlplugin.DbKindMain, cfg, resolver.NewNoopResolver(), serverlog.NewNoopLogger(), metrics.NoopMetricsHandler)
	if err != nil {
		return fmt.Errorf("open database: %w", err)
	}
	defer func() { _ = db.Close() }()

	row, err := selectNamespace(ctx, db, namespace)
	if err != nil {
		return err
	}
	if row == nil {
		ns, err := sqliteschema.NewNamespaceConfig(clusterName, namespace, false, nil)
		if err != nil {
			return fmt.Errorf("namespace %q: %w", namespace, err)
		}
		ns.Detail.Config.Retention = timestamp.DurationPtr(DefaultRetention)
		if err := sqliteschema.CreateNamespaces(cfg, ns); err != nil {
			return fmt.Errorf("create namespace %q: %w", namespace, err)
		}
		if row, err = selectNamespace(ctx, db, namespace); err != nil {
			return err
		}
		if row == nil {
			return fmt.Errorf("namespace %q missing after creation", namespace)
		}
	}
	return addSearchAttributes(ctx, db, row, attrs)
}

// selectNamespace returns the namespace's row, or nil if there is none.
func selectNamespace(ctx context.Context, db sqlplugin.DB, namespace string) (*sqlplugin.NamespaceRow, error) {
	rows, err := db.SelectFromNamespace(ctx, sqlplugin.NamespaceFilter{Name: &namespace})
	switch {
	case errors.Is(err, stdsql.ErrNoRows) || (err == nil && len(rows) == 0):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("read namespace %q: %w", namespace, err)
	}
	return &rows[0], nil
}

// addSearchAttributes maps each attribute the namespace lacks to a free
// preallocated column of its type, as the server's operator API does for SQL
// visibility, and bumps the namespace's versions.
func addSearchAttributes(ctx context.Context, db sqlplugin.DB, row *sqlplugin.NamespaceRow, attrs map[string]enums.IndexedValueType) error {
	if len(attrs) == 0 {
		return nil
	}
	encoding, err := enums.EncodingTypeFromString(row.DataEncoding)
	if err != nil {
		return fmt.Errorf("namespace %q: %w", row.Name, err)
	}
	ser := serialization.NewSerializer()
	detail, err := ser.NamespaceDetailFromBlob(&commonpb.DataBlob{Data: row.Data, EncodingType: encoding})
	if err != nil {
		return fmt.Errorf("decode namespace %q: %w", row.Name, err)
	}

	columns := sadefs.GetDBIndexSearchAttributes(nil).CustomSearchAttributes
	aliases := detail.GetConfig().GetCustomSearchAttributeAliases() // column → name
	if aliases == nil {
		aliases = map[string]string{}
	}
	columnOf := make(map[string]string, len(aliases)) // name → column
	for col, name := range aliases {
		columnOf[name] = col
	}
	sortedColumns := slices.Sorted(maps.Keys(columns))

	added := false
	for _, name := range slices.Sorted(maps.Keys(attrs)) {
		typ := attrs[name]
		if typ == enums.INDEXED_VALUE_TYPE_UNSPECIFIED {
			return fmt.Errorf("search attribute %q: type unspecified", name)
		}
		if sadefs.IsReserved(name) {
			return fmt.Errorf("search attribute %q: name is reserved by Temporal", name)
		}
		if col, ok := columnOf[name]; ok {
			if columns[col] != typ {
				return fmt.Errorf("search attribute %q is registered as %s, want %s", name, columns[col], typ)
			}
			continue
		}
		free := ""
		for _, col := range sortedColumns {
			if _, used := aliases[col]; !used && columns[col] == typ && sadefs.IsPreallocatedCSAFieldName(col, typ) {
				free = col
				break
			}
		}
		if free == "" {
			return fmt.Errorf("search attribute %q: no free %s column left", name, typ)
		}
		aliases[free] = name
		columnOf[name] = free
		added = true
	}
	if !added {
		return nil
	}
	detail.Config.CustomSearchAttributeAliases = aliases
	detail.ConfigVersion++
	blob, err := ser.NamespaceDetailToBlob(detail)
	if err != nil {
		return fmt.Errorf("encode namespace %q: %w", row.Name, err)
	}

	// As the server's SQL metadata store updates a namespace.
	tx, err := db.BeginTx(ctx)
	if err != nil {
		return fmt.Errorf("update namespace %q: %w", row.Name, err)
	}
	if err := updateNamespace(ctx, tx, row, blob); err != nil {
		_ = tx.Rollback()
		return fmt.Errorf("update namespace %q: %w", row.Name, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("update namespace %q: commit: %w", row.Name, err)
	}
	return nil
}

// updateNamespace writes the namespace's new data in tx and bumps the
// metadata notification version.
func updateNamespace(ctx context.Context, tx sqlplugin.Tx, row *sqlplugin.NamespaceRow, blob *commonpb.DataBlob) error {
	meta, err := tx.LockNamespaceMetadata(ctx)
	if err != nil {
		return fmt.Errorf("lock metadata: %w", err)
	}
	res, err := tx.UpdateNamespace(ctx, &sqlplugin.NamespaceRow{
		ID:                  row.ID,
		Name:                row.Name,
		Data:                blob.GetData(),
		DataEncoding:        blob.GetEncodingType().String(),
		IsGlobal:            row.IsGlobal,
		NotificationVersion: meta.NotificationVersion,
	})
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return fmt.Errorf("%d rows updated, want 1 (%v)", n, err)
	}
	res, err = tx.UpdateNamespaceMetadata(ctx, &sqlplugin.NamespaceMetadataRow{NotificationVersion: meta.NotificationVersion})
	if err != nil {
		return fmt.Errorf("bump metadata version: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return fmt.Errorf("metadata: %d rows updated, want 1 (%v)", n, err)
	}
	return nil
}
