// ASP.NET Core MVC: the serverlab contract (contracts/README.md) with
// controllers ([ApiController], attribute routes) on Kestrel, the way the 2019
// experiment's ASP.NET Core service was written. The contract logic lives in
// ../_shared/csharp/Serverlab.Contract, the host both ASP.NET Core stacks
// share in ../_shared/csharp/Serverlab.Hosting; this stack's web layer is App.cs
// and ContractController.cs.

using Serverlab.AspNetCoreMvc;
using Serverlab.Contract;
using Serverlab.Hosting;

// Sent verbatim in the hello body; equal to display_name in server.toml (a test checks it).
const string DisplayName = "ASP.NET Core MVC";
// PORT's default; equal to port in server.toml (a test checks it).
const int DefaultPort = 8182;

// HOST, PORT, WORKERS, WORKDAY_CALENDAR and TLS_CERT/TLS_KEY, read and checked
// before the host is built: a missing or unreadable calendar (or certificate)
// prints one line naming the variable and the path and exits with status 2. The
// calendar and the certificate are read here, once.
ServerSettings settings = ServerSettings.FromEnvironmentOrExit(DisplayName, DefaultPort);

// Serves until SIGTERM or SIGINT (exit status 0); 1 with one line on stderr when
// Kestrel cannot listen (ContractHost.Serve).
return App.Build(settings, args).Serve(settings, DisplayName);
