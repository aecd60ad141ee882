// Runs WAL checkpoints on a thread of its own, with its own connection, so the event loop never
// waits for them. SQLite's automatic checkpoint runs inside whichever commit crosses the threshold,
// on the event loop, and with its two fsyncs (WAL, then database) stalled every request behind it:
// about 40% of commit time while ingesting over 100 addresses.
//
// A PASSIVE checkpoint copies committed WAL frames into the database without blocking the writer
// or readers. It syncs the WAL before copying and the database after, so the writer may restart
// the WAL over frames only once they are durable in the database file. Frames committed but not
// yet fdatasynced by the group commit are simply made durable earlier. The thread checkpoints
// every CHECKPOINT_INTERVAL_MS; the main connection keeps an automatic checkpoint only as a far
// backstop (if this thread died, the WAL would still be bounded).
import Database from 'better-sqlite3';
import { parentPort, workerData } from 'node:worker_threads';

const CHECKPOINT_INTERVAL_MS = 50;

if (parentPort) {
  const { path } = workerData as { path: string };
  const db = new Database(path);
  db.pragma('busy_timeout = 5000');
  db.pragma('synchronous = NORMAL');
  const timer = setInterval(() => {
    try {
      db.pragma('wal_checkpoint(PASSIVE)');
    } catch {
      // Busy or locked: the next tick tries again.
    }
  }, CHECKPOINT_INTERVAL_MS);
  parentPort.on('message', (m: unknown) => {
    if (m === 'stop') {
      clearInterval(timer);
      db.close();
      parentPort?.close();
    }
  });
}
