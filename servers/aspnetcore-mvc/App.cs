using Microsoft.AspNetCore.Mvc;
using Microsoft.AspNetCore.Server.Kestrel.Core;
using Serverlab.Contract;

namespace Serverlab.AspNetCoreMvc;

/// <summary>
/// The web layer: MVC controllers (<see cref="ContractController"/>, [ApiController]
/// with attribute routes) on Kestrel over the shared contract library. Every setting
/// that is not ASP.NET Core's default is a [[tuning]] entry in server.toml and a row
/// of README.md's tuning table, with the same reason.
/// </summary>
public static class App
{
    /// <summary>Builds the server for <paramref name="settings"/>; <c>Run</c> or <c>StartAsync</c> serves.</summary>
    public static WebApplication Build(ServerSettings settings, string[] args)
    {
        // The stock builder of new ASP.NET Core services. ApplicationName is the
        // app's own assembly whoever hosts it (the tests start it in-process): MVC
        // finds its controllers there.
        WebApplicationBuilder builder = WebApplication.CreateBuilder(new WebApplicationOptions
        {
            Args = args,
            ApplicationName = typeof(App).Assembly.GetName().Name,
        });

        // Tuning: no logging providers. The contract forbids per-request logging;
        // with no provider nothing is logged, and ASP.NET Core's hosting layer also
        // skips its per-request log scope. A failure to listen is still printed on
        // stderr, as one line (Program.cs).
        builder.Logging.ClearProviders();

        builder.WebHost.ConfigureKestrel(kestrel =>
        {
            // Tuning: one endpoint, Listen(HOST, PORT), plain HTTP; protocols HTTP/1.1
            // and cleartext HTTP/2 by prior knowledge (Kestrel's default); no HTTPS
            // redirection, no static files. With TLS_CERT and TLS_KEY (FRONT=self) the
            // same endpoint serves HTTPS with that certificate, HTTP/1.1 and HTTP/2
            // chosen by ALPN, Kestrel's TLS defaults otherwise.
            kestrel.Listen(settings.ListenAddress, settings.Port, listen =>
            {
                if (settings.TlsCertificate is { } certificate)
                {
                    listen.Protocols = HttpProtocols.Http1AndHttp2;
                    listen.UseHttps(certificate);
                }
            });
            // Tuning: AddServerHeader as configured, true (Kestrel's default) unless
            // Kestrel:AddServerHeader says otherwise (Kestrel__AddServerHeader=false in the
            // environment): Kestrel sends "Server: Kestrel"; the contract records it
            // without judging it, and the README measures the 2019 lesson both ways.
            kestrel.AddServerHeader = builder.Configuration.GetValue("Kestrel:AddServerHeader", true);
            // Tuning: Kestrel's limits are left at their defaults (no limit on
            // connections or on requests per connection, keep-alive timeout 130 s,
            // request headers timeout 30 s, minimum response data rate 240 bytes/s
            // after a 5 s grace): they never bind the contract's requests.
        });

        builder.WebHost.UseSockets(sockets =>
        {
            // Tuning: IOQueueCount = WORKERS (unset: Environment.ProcessorCount, which
            // honours the cgroup CPU quota and the cpuset), instead of Kestrel's
            // min(CPUs, 16): the one thread-count-like knob Kestrel has. The queues, the
            // MVC pipeline and the actions run on the .NET thread pool, which sizes itself.
            sockets.IOQueueCount = settings.Workers;
            // Tuning: listen backlog 4096 (Kestrel's default is 512, which overflows when
            // thousands of connections arrive at once); the kernel caps it at
            // net.core.somaxconn.
            sockets.Backlog = 4096;
        });

        // Tuning: ShutdownTimeout = 10 s (the default is 30 s): on SIGTERM or SIGINT
        // in-flight requests finish, then the process exits 0, inside the harness's
        // 15 s stop timeout.
        builder.Services.Configure<HostOptions>(host => host.ShutdownTimeout = TimeSpan.FromSeconds(10));

        // The contract's routes (with the calendar read at start-up): one object
        // shared by every request, injected into the controller.
        builder.Services.AddSingleton(settings.Routes);

        // Tuning: controllers only (no views, no Razor Pages); see ContractController.
        builder.Services.AddControllers();

        // Tuning: [ApiController]'s automatic answers off. Its model-state filter
        // answers an invalid model with a 400 ProblemDetails (JSON) before the action
        // runs, and its client-error mapping turns status-code results of 400 and
        // above into ProblemDetails. The actions bind nothing and return the
        // contract's own bodies, so neither can fire today; switched off, neither can
        // answer instead of the contract's exact 400 bodies after a change either.
        builder.Services.Configure<ApiBehaviorOptions>(api =>
        {
            api.SuppressModelStateInvalidFilter = true;
            api.SuppressMapClientErrors = true;
        });

        WebApplication app = builder.Build();

        // Tuning: exact paths. Endpoint routing matches paths case-insensitively and
        // ignores a trailing slash, so /workday/ and /WORKDAY would reach the /workday
        // action; the contract makes every path but exactly / and /workday a 404.
        app.Use(static (context, next) =>
        {
            if (context.Request.Path.Value is Routes.RootPath or Routes.WorkdayPath)
            {
                return next(context);
            }
            context.Response.StatusCode = StatusCodes.Status404NotFound;
            return Task.CompletedTask;
        });
        app.UseRouting();

        // The attribute routes of ContractController: GET and HEAD on both paths. Any
        // other method on these paths matches no action, and routing answers 405 with
        // "Allow: GET, HEAD"; any other path is a 404.
        app.MapControllers();

        return app;
    }
}
