// Node's `stream`: the legacy `Stream` (an EventEmitter with the old `pipe`, as Node's
// lib/internal/streams/legacy.js defines it), which is the module's export, and on it the
// streams of readable-stream 3.6.2 (the npm copy of Node's own, vendored under
// `/.tokenvault/node_modules`). `Stream` is defined before readable-stream loads: that package
// requires `stream` back for its base class and must find this one, already usable.
const EE = require('events');
const util = require('util');

function Stream(opts) {
  EE.call(this, opts);
}
util.inherits(Stream, EE);

Stream.prototype.pipe = function pipe(dest, options) {
  const source = this;
  function ondata(chunk) {
    if (dest.writable && dest.write(chunk) === false && source.pause) source.pause();
  }
  source.on('data', ondata);
  function ondrain() {
    if (source.readable && source.resume) source.resume();
  }
  dest.on('drain', ondrain);
  let didOnEnd = false;
  function onend() {
    if (didOnEnd) return;
    didOnEnd = true;
    dest.end();
  }
  function onclose() {
    if (didOnEnd) return;
    didOnEnd = true;
    if (typeof dest.destroy === 'function') dest.destroy();
  }
  if (!dest._isStdio && (!options || options.end !== false)) {
    source.on('end', onend);
    source.on('close', onclose);
  }
  function cleanup() {
    source.removeListener('data', ondata);
    dest.removeListener('drain', ondrain);
    source.removeListener('end', onend);
    source.removeListener('close', onclose);
    source.removeListener('error', onerror);
    dest.removeListener('error', onerror);
    source.removeListener('end', cleanup);
    source.removeListener('close', cleanup);
    dest.removeListener('close', cleanup);
  }
  function onerror(er) {
    cleanup();
    if (EE.listenerCount(this, 'error') === 0) this.emit('error', er);
  }
  source.prependListener ? source.prependListener('error', onerror) : source.on('error', onerror);
  dest.prependListener ? dest.prependListener('error', onerror) : dest.on('error', onerror);
  source.on('end', cleanup);
  source.on('close', cleanup);
  dest.on('close', cleanup);
  dest.emit('pipe', source);
  return dest;
};

module.exports = Stream;
Stream.Stream = Stream;

const streams = require('readable-stream');
Stream.Readable = streams.Readable;
Stream.Writable = streams.Writable;
Stream.Duplex = streams.Duplex;
Stream.Transform = streams.Transform;
Stream.PassThrough = streams.PassThrough;
Stream.finished = streams.finished;
Stream.pipeline = streams.pipeline;
const promisified = (fn) => (...args) => new Promise((resolve, reject) => {
  fn(...args, (error, value) => (error ? reject(error) : resolve(value)));
});
Stream.promises = {
  pipeline: promisified(streams.pipeline),
  finished: promisified(streams.finished),
};
