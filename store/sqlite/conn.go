package sqlite

import (
	"context"
	"database/sql/driver"
	"errors"
	"strings"

	"modernc.org/sqlite"
)

// The store's connections wrap the driver's for two reasons the driver
// does not serve.
//
// Statement cache. The driver compiles a query's SQL on every
// ExecContext and QueryContext that is not a prepared statement, and
// database/sql prepares only when asked to. Compiling was a third of the
// CPU of an engine burn-down: the queue's statements are a small fixed
// set run over and over. Each connection keeps its single statements
// compiled, keyed by their text, and runs them through the driver's
// prepared-statement path, which resets a statement for reuse.
//
// Shield (the writer only). The driver interrupts a running statement
// when its context ends, and SQLite answers an interrupted write inside a
// transaction by rolling back the whole transaction: under group commit
// (commit.go) that would undo other callers' writes. The writer's
// statements run without their context's cancellation.

// maxCachedStmts bounds a connection's statement cache. The store runs a
// few dozen distinct statements; queries built with a variable number of
// parameters (IN lists) add more, and the cache drops some when full.
const maxCachedStmts = 256

// connector opens wrapped connections of the driver.
type connector struct {
	dsn    string
	d      *sqlite.Driver
	shield bool
}

func (c connector) Connect(context.Context) (driver.Conn, error) {
	dc, err := c.d.Open(c.dsn)
	if err != nil {
		return nil, err
	}
	inner, ok := dc.(driverConn)
	if !ok {
		dc.Close()
		return nil, errors.New("sqlite: the driver's connection lacks a context method the store uses")
	}
	return &conn{driverConn: inner, shield: c.shield, stmts: map[string]*cachedStmt{}}, nil
}

func (c connector) Driver() driver.Driver { return c.d }

// driverConn is what the store uses of the driver's connection.
type driverConn interface {
	driver.Conn
	driver.ConnBeginTx
	driver.ConnPrepareContext
	driver.ExecerContext
	driver.QueryerContext
	driver.Pinger
	driver.SessionResetter
	driver.Validator
}

// driverStmt is what the store uses of the driver's statement.
type driverStmt interface {
	driver.Stmt
	driver.StmtExecContext
	driver.StmtQueryContext
}

// conn is one wrapped connection. database/sql uses a connection from one
// goroutine at a time, so the cache needs no lock.
type conn struct {
	driverConn
	shield bool
	stmts  map[string]*cachedStmt
}

type cachedStmt struct {
	st   driverStmt
	busy bool // its rows are open
}

func (c *conn) ctx(ctx context.Context) context.Context {
	if c.shield {
		return context.WithoutCancel(ctx)
	}
	return ctx
}

// stmt returns the compiled statement for query and a function to call
// when done with it. A statement whose rows are still open is not shared:
// a second use meanwhile gets a statement of its own, closed after use.
func (c *conn) stmt(ctx context.Context, query string) (driverStmt, func(), error) {
	if cs := c.stmts[query]; cs != nil && !cs.busy {
		cs.busy = true
		return cs.st, func() { cs.busy = false }, nil
	}
	ds, err := c.driverConn.PrepareContext(ctx, query)
	if err != nil {
		return nil, nil, err
	}
	st, ok := ds.(driverStmt)
	if !ok {
		ds.Close()
		return nil, nil, errors.New("sqlite: the driver's statement lacks a context method the store uses")
	}
	if _, held := c.stmts[query]; held {
		return st, func() { st.Close() }, nil
	}
	if len(c.stmts) >= maxCachedStmts {
		c.evict()
	}
	cs := &cachedStmt{st: st, busy: true}
	c.stmts[query] = cs
	return st, func() { cs.busy = false }, nil
}

// evict closes and forgets some statements not in use.
func (c *conn) evict() {
	n := 0
	for q, cs := range c.stmts {
		if cs.busy {
			continue
		}
		cs.st.Close()
		delete(c.stmts, q)
		if n++; n >= maxCachedStmts/4 {
			return
		}
	}
}

// cacheable: the driver keeps one compiled statement only for a single
// statement; scripts (migrations) are compiled at each run anyway.
func cacheable(query string) bool { return !strings.Contains(query, ";") }

func (c *conn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	ctx = c.ctx(ctx)
	if !cacheable(query) {
		return c.driverConn.ExecContext(ctx, query, args)
	}
	st, done, err := c.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	defer done()
	return st.ExecContext(ctx, args)
}

func (c *conn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	ctx = c.ctx(ctx)
	if !cacheable(query) {
		return c.driverConn.QueryContext(ctx, query, args)
	}
	st, done, err := c.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	rows, err := st.QueryContext(ctx, args)
	if err != nil {
		done()
		return nil, err
	}
	return &cachedRows{Rows: rows, done: done}, nil
}

func (c *conn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	return c.driverConn.BeginTx(c.ctx(ctx), opts)
}

// PrepareContext serves database/sql's explicit Prepare: a statement of
// the caller's own, not from the cache.
func (c *conn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	ds, err := c.driverConn.PrepareContext(c.ctx(ctx), query)
	if err != nil || !c.shield {
		return ds, err
	}
	st, ok := ds.(driverStmt)
	if !ok {
		ds.Close()
		return nil, errors.New("sqlite: the driver's statement lacks a context method the store uses")
	}
	return shieldedStmt{st}, nil
}

// Close closes the cached statements, then the connection.
func (c *conn) Close() error {
	var errs []error
	for q, cs := range c.stmts {
		errs = append(errs, cs.st.Close())
		delete(c.stmts, q)
	}
	return errors.Join(append(errs, c.driverConn.Close())...)
}

// cachedRows gives its statement back when closed.
type cachedRows struct {
	driver.Rows
	done func()
}

func (r *cachedRows) Close() error {
	err := r.Rows.Close()
	if r.done != nil {
		r.done()
		r.done = nil
	}
	return err
}

// shieldedStmt is an explicitly prepared statement on the writer.
type shieldedStmt struct{ driverStmt }

func (s shieldedStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	return s.driverStmt.ExecContext(context.WithoutCancel(ctx), args)
}

func (s shieldedStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	return s.driverStmt.QueryContext(context.WithoutCancel(ctx), args)
}
