// Node's `zlib`, as far as the packages that require it at load need (node-fetch, axios): its
// constants. Compressing and decompressing are not offered; each function throws an error
// naming itself. Outbound answers arrive uncompressed: the vault asks destinations for the
// identity encoding (docs/decisions.md §7).
const constants = {
  Z_NO_FLUSH: 0, Z_PARTIAL_FLUSH: 1, Z_SYNC_FLUSH: 2, Z_FULL_FLUSH: 3, Z_FINISH: 4, Z_BLOCK: 5,
  Z_OK: 0, Z_STREAM_END: 1, Z_NEED_DICT: 2, Z_ERRNO: -1, Z_STREAM_ERROR: -2, Z_DATA_ERROR: -3,
  Z_BUF_ERROR: -5, Z_NO_COMPRESSION: 0, Z_BEST_SPEED: 1, Z_BEST_COMPRESSION: 9,
  Z_DEFAULT_COMPRESSION: -1, Z_FILTERED: 1, Z_HUFFMAN_ONLY: 2, Z_RLE: 3, Z_FIXED: 4,
  Z_DEFAULT_STRATEGY: 0, BROTLI_OPERATION_PROCESS: 0, BROTLI_OPERATION_FLUSH: 1,
  BROTLI_OPERATION_FINISH: 2,
};
const missing = (name) => function () {
  const error = new Error(`zlib.${name} is not offered in the vault's code runtime`);
  error.code = 'ERR_METHOD_NOT_IMPLEMENTED';
  throw error;
};
module.exports = { constants, ...constants };
for (const name of ['createGzip', 'createGunzip', 'createDeflate', 'createInflate', 'createDeflateRaw',
  'createInflateRaw', 'createUnzip', 'createBrotliCompress', 'createBrotliDecompress', 'gzip', 'gunzip',
  'deflate', 'inflate', 'deflateRaw', 'inflateRaw', 'unzip', 'brotliCompress', 'brotliDecompress',
  'gzipSync', 'gunzipSync', 'deflateSync', 'inflateSync', 'deflateRawSync', 'inflateRawSync',
  'unzipSync', 'brotliCompressSync', 'brotliDecompressSync']) {
  module.exports[name] = missing(name);
}
