job "web" {
  group "app" {
    task "server" {
      driver = "exec"
      artifact {
        source = "https://example.com/a.tgz"
        options {
          checksum = "e3b0c44298fc1c149afbf4c8996fb924"
        }
      }
      artifact {
        source = "https://example.com/b.tgz"
        options {
          checksum = "crc32:e3b0c442"
        }
      }
      artifact {
        source = "https://example.com/c.tgz"
        options {
          checksum = "md5:e3b0c442"
        }
      }
      artifact {
        source = "https://example.com/d.tgz"
        options {
          checksum = "sha1:not-hex"
        }
      }
    }
  }
}
