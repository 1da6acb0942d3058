job "plugin" {
  type = "system"
  group "nodes" {
    task "plugin" {
      driver = "docker"
      config {
        image = "registry.k8s.io/sig-storage/hostpathplugin:v1.11.0"
      }
      csi_plugin {
        type = "nodes"
      }
    }
  }
}
