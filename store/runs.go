package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Run states, as a starter records them with SetRunState and `starter runs` shows them.
const (
	RunRunning = "running"
	// RunStopped: its starter was interrupted (Ctrl-C) before it ended. It is not terminal: in the embedded
	// default nothing continues it until its owner runs it again.
	RunStopped    = "stopped"
	RunCompleted  = "completed"
	RunFailed     = "failed"
	RunCancelled  = "cancelled"
	RunTerminated = "terminated"
	RunTimedOut   = "timed out"
)

// RunInfo is what the store knows of a run besides its spec and its records.
type RunInfo struct {
	ID string
	// Created is when the run was first saved.
	Created time.Time
	// State is the last state a starter recorded (RunRunning, RunCompleted, ...); "" when none was. A process
	// killed while its run was going leaves RunRunning behind: only the Temporal server knows for sure.
	State string
	// StateAt is when State was recorded.
	StateAt time.Time
	// Elapsed is the run's wall time as its workflow measured it at export; zero with HasElapsed false before.
	Elapsed    time.Duration
	HasElapsed bool
}

// Terminal reports whether state is the state of a run that has ended.
func Terminal(state string) bool {
	switch state {
	case RunCompleted, RunFailed, RunCancelled, RunTerminated, RunTimedOut:
		return true
	}
	return false
}

// sqliteTime is how the SQLite schema writes times (created defaults to it).
const sqliteTime = "2006-01-02T15:04:05.999Z"

// Runs lists the runs of the store, newest first.
func (s *SQLite) Runs(ctx context.Context) ([]RunInfo, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT r.run, r.created, coalesce(st.state, ''), coalesce(st.at, ''), e.elapsed_ms
		FROM runs r LEFT JOIN run_state st ON st.run = r.run LEFT JOIN run_elapsed e ON e.run = r.run
		ORDER BY r.created DESC, r.run DESC`)
	if err != nil {
		return nil, fmt.Errorf("store: list runs: %w", err)
	}
	defer rows.Close()
	var out []RunInfo
	for rows.Next() {
		var ri RunInfo
		var created, at string
		var ms sql.NullInt64
		if err := rows.Scan(&ri.ID, &created, &ri.State, &at, &ms); err != nil {
			return nil, fmt.Errorf("store: list runs: %w", err)
		}
		ri.Created, _ = time.Parse(sqliteTime, created)
		if at != "" {
			ri.StateAt, _ = time.Parse(sqliteTime, at)
		}
		ri.Elapsed, ri.HasElapsed = time.Duration(ms.Int64)*time.Millisecond, ms.Valid
		out = append(out, ri)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: list runs: %w", err)
	}
	return out, nil
}

// SetRunState records the state of a run at a time. The run need not exist yet.
func (s *SQLite) SetRunState(ctx context.Context, run, state string, at time.Time) error {
	tx, end, err := s.beginWrite(ctx)
	if err != nil {
		return fmt.Errorf("store: set state of %s: %w", run, err)
	}
	defer end()
	if _, err := tx.ExecContext(ctx, "INSERT INTO runs (run) VALUES (?) ON CONFLICT (run) DO NOTHING", run); err != nil {
		return fmt.Errorf("store: set state of %s: %w", run, err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO run_state (run, state, at) VALUES (?, ?, ?)
		ON CONFLICT (run) DO UPDATE SET state = excluded.state, at = excluded.at`,
		run, state, at.UTC().Format(sqliteTime)); err != nil {
		return fmt.Errorf("store: set state of %s: %w", run, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: set state of %s: commit: %w", run, err)
	}
	return nil
}

// Runs lists the runs of the store, newest first.
func (p *Postgres) Runs(ctx context.Context) ([]RunInfo, error) {
	rows, err := p.pool.Query(ctx, `SELECT r.run, r.created, coalesce(st.state, ''), st.at, r.elapsed_ms
		FROM silico_runs r LEFT JOIN silico_run_state st ON st.run = r.run
		ORDER BY r.created DESC, r.run DESC`)
	if err != nil {
		return nil, fmt.Errorf("store: list runs: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (RunInfo, error) {
		var ri RunInfo
		var at *time.Time
		var ms *int64
		if err := row.Scan(&ri.ID, &ri.Created, &ri.State, &at, &ms); err != nil {
			return ri, err
		}
		if at != nil {
			ri.StateAt = *at
		}
		if ms != nil {
			ri.Elapsed, ri.HasElapsed = time.Duration(*ms)*time.Millisecond, true
		}
		return ri, nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: list runs: %w", err)
	}
	return out, nil
}

// SetRunState records the state of a run at a time. The run need not exist yet.
func (p *Postgres) SetRunState(ctx context.Context, run, state string, at time.Time) error {
	err := pgx.BeginFunc(ctx, p.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "INSERT INTO silico_runs (run) VALUES ($1) ON CONFLICT (run) DO NOTHING", run); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO silico_run_state (run, state, at) VALUES ($1, $2, $3)
			ON CONFLICT (run) DO UPDATE SET state = excluded.state, at = excluded.at`, run, state, at)
		return err
	})
	if err != nil {
		return fmt.Errorf("store: set state of %s: %w", run, err)
	}
	return nil
}
