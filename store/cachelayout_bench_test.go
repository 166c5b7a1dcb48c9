package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// cacheLayout is one way to keep the response cache in SQLite, for BenchmarkCacheLayouts: its table, how an entry
// is written, and the lookup of 256 keys.
type cacheLayout struct {
	name   string
	schema string
	put    string
	putArg func(e CacheEntry) []any
	// get takes 256 arguments made by getArg and returns (key, value, sum) rows.
	get    string
	getArg func(k CacheKey) any
	// packed is whether get returns (id, sum || value) rows instead.
	packed bool
}

// keyPrefix is the first 8 bytes of k as a signed integer, SQLite's rowid type.
func keyPrefix(k CacheKey) int64 { return int64(binary.BigEndian.Uint64(k[:8])) }

func cacheLayouts() []cacheLayout {
	marks := strings.TrimSuffix(strings.Repeat("?, ", 256), ", ")
	full := func(e CacheEntry) []any {
		return []any{e.Key[:], e.Model, e.Value, e.Sum[:], e.Run, e.Created.UnixMilli()}
	}
	return []cacheLayout{
		{
			name: "blob-key",
			schema: `CREATE TABLE cache (key BLOB PRIMARY KEY, model TEXT NOT NULL, value BLOB NOT NULL, sum BLOB NOT NULL,
				run TEXT NOT NULL, created INTEGER NOT NULL) WITHOUT ROWID`,
			put:    `INSERT INTO cache (key, model, value, sum, run, created) VALUES (?, ?, ?, ?, ?, ?)`,
			putArg: full,
			get:    "SELECT key, value, sum FROM cache WHERE key IN (" + marks + ")",
			getArg: func(k CacheKey) any { return k[:] },
		},
		{
			name: "int-prefix-rowid",
			schema: `CREATE TABLE cache (id INTEGER PRIMARY KEY, key BLOB NOT NULL, model TEXT NOT NULL, value BLOB NOT NULL,
				sum BLOB NOT NULL, run TEXT NOT NULL, created INTEGER NOT NULL)`,
			put: `INSERT INTO cache (id, key, model, value, sum, run, created) VALUES (?, ?, ?, ?, ?, ?, ?)`,
			putArg: func(e CacheEntry) []any {
				return append([]any{keyPrefix(e.Key)}, full(e)...)
			},
			get:    "SELECT key, value, sum FROM cache WHERE id IN (" + marks + ")",
			getArg: func(k CacheKey) any { return keyPrefix(k) },
		},
		{
			// The checksum and the value in one column: one column to read per row, and no key column, since the
			// value holds its key (the lookup returns the key it asked for, and validation compares it with the
			// key inside the value).
			name: "int-prefix-packed",
			schema: `CREATE TABLE cache (id INTEGER PRIMARY KEY, entry BLOB NOT NULL, model TEXT NOT NULL, run TEXT NOT NULL,
				created INTEGER NOT NULL)`,
			put: `INSERT INTO cache (id, entry, model, run, created) VALUES (?, ?, ?, ?, ?)`,
			putArg: func(e CacheEntry) []any {
				return []any{keyPrefix(e.Key), append(e.Sum[:len(e.Sum):len(e.Sum)], e.Value...), e.Model, e.Run, e.Created.UnixMilli()}
			},
			get:    "SELECT id, entry FROM cache WHERE id IN (" + marks + ")",
			getArg: func(k CacheKey) any { return keyPrefix(k) },
			packed: true,
		},
	}
}

// benchEntry is an entry shaped as the cache package writes one: a version byte, the key, two varint counts and a
// short answer, under the SHA-256 of those bytes.
func benchEntry(i int) CacheEntry {
	k := sha256.Sum256(fmt.Appendf(nil, "bench key %d", i))
	v := append([]byte{1}, k[:]...)
	v = binary.AppendUvarint(v, 120)
	v = binary.AppendUvarint(v, 9)
	v = append(v, "4. Agree: I am fairly outgoing."...)
	return CacheEntry{Key: k, Model: "bench-model", Value: v, Sum: sha256.Sum256(v), Run: "cache-benchmark", Created: time.Now()}
}

// BenchmarkCacheLayouts reads 100,000 entries of a store of 100,000, 256 keys per query, validating each row
// (checksum and the key inside the value), on one connection, for each layout of cacheLayouts, in the order the
// entries were written (a rerun of the same grid) and shuffled, with SQLite's default page cache and a larger
// one. Run it with
//
//	go test -run '^$' -bench CacheLayouts -benchtime 3x ./store/
func BenchmarkCacheLayouts(b *testing.B) {
	const n = 100_000
	entries := make([]CacheEntry, n)
	for i := range entries {
		entries[i] = benchEntry(i)
	}
	shuffled := make([]CacheKey, n)
	written := make([]CacheKey, n)
	for i, e := range entries {
		written[i] = e.Key
		shuffled[i] = e.Key
	}
	rand.New(rand.NewPCG(1, 2)).Shuffle(n, func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	ctx := context.Background()
	for _, l := range cacheLayouts() {
		for _, cacheKB := range []int{2000, 32000} {
			b.Run(fmt.Sprintf("%s/cache-%dMB", l.name, cacheKB/1000), func(b *testing.B) {
				db := fillLayout(b, l, entries, cacheKB)
				for _, order := range []struct {
					name string
					keys []CacheKey
				}{{"written-order", written}, {"shuffled", shuffled}} {
					b.Run(order.name, func(b *testing.B) {
						st, err := db.PrepareContext(ctx, l.get)
						if err != nil {
							b.Fatal(err)
						}
						defer st.Close()
						args := make([]any, 256)
						cpu0 := cpuTime(b)
						for b.Loop() {
							hits := 0
							for start := 0; start < n; start += 256 {
								part := order.keys[start:min(n, start+256)]
								for i := range args {
									args[i] = l.getArg(part[min(i, len(part)-1)])
								}
								hits += readValidated(b, st, args, part, l.packed)
							}
							if hits != n {
								b.Fatalf("%d hits, want %d", hits, n)
							}
						}
						reportHits(b, n*b.N, cpuTime(b)-cpu0)
					})
				}
			})
		}
	}
}

// fillLayout writes entries into a fresh file of layout l, in transactions of 1,000, and returns it on one
// connection with a page cache of cacheKB kilobytes.
func fillLayout(b *testing.B, l cacheLayout, entries []CacheEntry, cacheKB int) *sql.DB {
	ctx := context.Background()
	db, err := openSQLiteDB(filepath.Join(b.TempDir(), "layout.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = db.Close() })
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(ctx, l.schema); err != nil {
		b.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, fmt.Sprintf("PRAGMA cache_size = -%d", cacheKB)); err != nil {
		b.Fatal(err)
	}
	for start := 0; start < len(entries); start += 1000 {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			b.Fatal(err)
		}
		put, err := tx.PrepareContext(ctx, l.put)
		if err != nil {
			b.Fatal(err)
		}
		for _, e := range entries[start:min(len(entries), start+1000)] {
			if _, err := put.ExecContext(ctx, l.putArg(e)...); err != nil {
				b.Fatal(err)
			}
		}
		_ = put.Close()
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
	}
	// Checkpoint, so that lookups read the database file, not the WAL, as they do in a store that has been idle.
	if _, err := db.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		b.Fatal(err)
	}
	return db
}

// readValidated runs st with args, the lookup of keys, and returns how many rows passed the checks a lookup
// makes: the checksum of the value and the key inside it. Rows of a packed layout are (prefix, sum || value), and
// their key is the one of keys with that prefix.
func readValidated(b *testing.B, st *sql.Stmt, args []any, keys []CacheKey, packed bool) int {
	rows, err := st.Query(args...)
	if err != nil {
		b.Fatal(err)
	}
	defer rows.Close()
	var byPrefix map[int64]CacheKey
	if packed {
		byPrefix = make(map[int64]CacheKey, len(keys))
		for _, k := range keys {
			byPrefix[keyPrefix(k)] = k
		}
	}
	ok := 0
	for rows.Next() {
		var key, value, sum sql.RawBytes
		if packed {
			var id int64
			var entry sql.RawBytes
			if err := rows.Scan(&id, &entry); err != nil {
				b.Fatal(err)
			}
			k := byPrefix[id]
			key, sum, value = k[:], entry[:min(32, len(entry))], entry[min(32, len(entry)):]
		} else if err := rows.Scan(&key, &value, &sum); err != nil {
			b.Fatal(err)
		}
		s := sha256.Sum256(value)
		if bytes.Equal(s[:], sum) && len(value) > 33 && bytes.Equal(value[1:33], key) {
			ok++
		}
	}
	if err := rows.Err(); err != nil {
		b.Fatal(err)
	}
	return ok
}

// cpuTime is the CPU time this process has used so far, user and system: what a lookup costs whatever else the
// machine runs, where hits/s depends on the share of the cores the benchmark gets.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportHits reports hits/s and the CPU microseconds per hit of hits lookups that used cpu.
func reportHits(b *testing.B, hits int, cpu time.Duration) {
	b.ReportMetric(float64(hits)/b.Elapsed().Seconds(), "hits/s")
	b.ReportMetric(float64(cpu.Microseconds())/float64(hits), "cpu-µs/hit")
}
