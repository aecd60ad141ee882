// The worker thread of json-body-pool.ts: checks one large captured JSON body at a time, off the
// event loop, and answers the text to store and the part of the value recognition reads.
import { parentPort } from 'node:worker_threads';
import { checkJsonText, recognisable } from './json-body.js';

const port = parentPort;
if (!port) throw new Error('json-body-worker.ts runs as a worker thread only');

port.on('message', (message: { id: number; text: string }) => {
  const checked = checkJsonText(message.text);
  port.postMessage({ id: message.id, checked: checked === null ? null : { json: checked.json, value: recognisable(checked.value) } });
});
