// `storedBytes` (domain/queue-quota.ts) in each dialect's SQL, over an events row: what the row
// holds of its address's byte quota. `jsonBytesSql` leaves out the blobs, which page budgets do not
// count (a page carries a blob's URL, not its bytes).
export type Dialect = 'sqlite' | 'postgres';

/** UTF-8 bytes of the row's data and metadata. `t`: the events table's alias, if the query has one. */
export function jsonBytesSql(dialect: Dialect, t = ''): string {
  const c = t === '' ? '' : `${t}.`;
  return dialect === 'sqlite'
    ? `length(CAST(${c}data AS BLOB)) + ifnull(length(CAST(${c}metadata AS BLOB)), 0)`
    : `octet_length(${c}data) + coalesce(octet_length(${c}metadata), 0)`;
}

/** jsonBytesSql and the bytes stored beside the event. */
export function storedBytesSql(dialect: Dialect, t = ''): string {
  return `${jsonBytesSql(dialect, t)} + ${t === '' ? '' : `${t}.`}blob_bytes`;
}
