// Node's `tty`: code in the vault has no terminal.
module.exports = {
  isatty: () => false,
  ReadStream: function ReadStream() { throw new Error('tty.ReadStream is not offered'); },
  WriteStream: function WriteStream() { throw new Error('tty.WriteStream is not offered'); },
};
