job "nightly" {
  type = "batch"

  periodic {
    cron = "61 * * * *"
  }

  group "run" {
    task "backup" {
      driver = "exec"
    }
  }
}
