job "agent" {
  type = "system"
  group "collector" {
    count = 3
    task "collector" {
      driver = "exec"
    }
  }
}
