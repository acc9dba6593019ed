// Node's (deprecated) `constants`: the file-system and operating-system constants together.
module.exports = {
  ...require('fs').constants,
  ...require('os').constants.signals,
  ...require('os').constants.errno,
  O_RDONLY: 0, O_WRONLY: 1, O_RDWR: 2, O_CREAT: 64, O_EXCL: 128, O_TRUNC: 512, O_APPEND: 1024,
  S_IFMT: 61440, S_IFREG: 32768, S_IFDIR: 16384, S_IFLNK: 40960,
};
