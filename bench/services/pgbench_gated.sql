-- pgbench_gated.sql: pgbench -S's select-only transaction, for
-- bench/services/run.sh, with gates around each client's work: the
-- client connects (its backend is forked and running), then waits until
-- the file named by -D gate=FILE exists; after its -D last=N'th
-- transaction it adds a line to -D gate_end=FILE and waits until
-- -D gate_exit=FILE exists before it disconnects. (\shell joins its words
-- with spaces for sh; a word that starts with a colon, whole, is a
-- variable.) The runner starts a CPU profile and reads the service's
-- CPU time while every backend waits at the first gate (a process that
-- joins the tree during a profile is profiled only from the next one),
-- reads it again at the second (the work done, the backends still
-- there), and once more after they have exited. The variables started
-- and done persist over a client's transactions. Scale 2: 200,000
-- accounts.
\if :started = 0
\shell sh -c 'while [ ! -e :gate ] ; do sleep 0.02 ; done'
\set started 1
\endif
\set aid random(1, 200000)
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
\set done :done + 1
\if :done = :last
\shell sh -c 'echo done >> :gate_end ; while [ ! -e :gate_exit ] ; do sleep 0.02 ; done'
\endif
