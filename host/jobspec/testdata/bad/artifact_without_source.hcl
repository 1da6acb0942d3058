job "web" {
  group "app" {
    task "server" {
      driver = "exec"
      artifact {
        destination = "local/bin"
      }
    }
  }
}
