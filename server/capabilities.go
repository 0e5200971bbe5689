package server

// capabilities is what the server declares: each feature that has
// something registered, with list_changed where the server sends it.
func (s *Server) capabilities() Capabilities {
	var caps Capabilities
	if s.tools.hasTools() {
		caps.Tools = &ListChangedCapability{ListChanged: true}
	}
	caps.Resources = s.resourcesCapability()
	caps.Prompts = s.promptsCapability()
	caps.Completions = s.completionsCapability()
	caps.Logging = s.loggingCapability()
	caps.Tasks = s.tasksCapability()
	s.withUIExtension(&caps)     // apps.go
	s.withSkillsExtension(&caps) // skills_methods.go
	return caps
}
