// Command gitea builds the real Gitea server, v1.26.0, from its Go module,
// for workqueue's integration tests (DESIGN section 7). It is its own
// module so that workqueue's module does not inherit Gitea's dependency
// graph; its replace lines repeat Gitea's own, which only apply in a main
// module. scripts/gitea builds it once and caches the binary outside the
// repository.
package main

import (
	"os"
	"runtime"

	"code.gitea.io/gitea/cmd"
	"code.gitea.io/gitea/modules/log"
	"code.gitea.io/gitea/modules/setting"

	// The markup renderers Gitea's own main registers.
	_ "code.gitea.io/gitea/modules/markup/asciicast"
	_ "code.gitea.io/gitea/modules/markup/console"
	_ "code.gitea.io/gitea/modules/markup/csv"
	_ "code.gitea.io/gitea/modules/markup/markdown"
	_ "code.gitea.io/gitea/modules/markup/orgmode"

	"github.com/urfave/cli/v3"
)

// version is the Gitea release this module requires; clients such as the
// Gitea SDK gate features on the version the server reports.
const version = "1.26.0"

func init() {
	setting.AppVer = version
	setting.AppBuiltWith = " built with " + runtime.Version() + " for workqueue's tests"
}

func main() {
	cli.OsExiter = func(code int) {
		log.GetManager().Close()
		os.Exit(code)
	}
	app := cmd.NewMainApp(cmd.AppVersion{Version: version, Extra: setting.AppBuiltWith})
	_ = cmd.RunMainApp(app, os.Args...) // RunMainApp reports its own errors
	log.GetManager().Close()
}
