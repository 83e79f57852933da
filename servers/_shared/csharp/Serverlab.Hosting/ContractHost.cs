using System.Reflection;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Http;
using Microsoft.AspNetCore.Server.Kestrel.Core;
using Microsoft.Extensions.Configuration;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;
using Serverlab.Contract;

namespace Serverlab.Hosting;

/// <summary>
/// What every ASP.NET Core stack shares below its own routing: the builder, Kestrel's
/// endpoint and transport, the host's shutdown, and the contract's exact paths. Each
/// stack then maps its routes its own way (route handlers, controllers). Every setting
/// that is not ASP.NET Core's default is a [[tuning]] entry in each stack's server.toml
/// and a row of its README's tuning table, with the same reason.
/// </summary>
public static class ContractHost
{
    /// <summary>
    /// ASP.NET Core's stock builder for <paramref name="settings"/>, with the shared tuning.
    /// <paramref name="application"/> is the stack's own assembly, whoever hosts it (the
    /// tests start the stacks in-process): MVC finds its controllers there.
    /// </summary>
    public static WebApplicationBuilder CreateBuilder(ServerSettings settings, string[] args, Assembly application)
    {
        WebApplicationBuilder builder = WebApplication.CreateBuilder(new WebApplicationOptions
        {
            Args = args,
            ApplicationName = application.GetName().Name,
        });

        // Tuning: no logging providers. The contract forbids per-request logging;
        // with no provider nothing is logged, and ASP.NET Core's hosting layer also
        // skips its per-request log scope. A failure to listen is still printed on
        // stderr, as one line (Serve).
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
            // without judging it, and the stacks' READMEs measure the 2019 lesson both ways.
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
            // min(CPUs, 16): the one thread-count-like knob Kestrel has. The queues and
            // the stack's handlers run on the .NET thread pool, which sizes itself.
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

        return builder;
    }

    /// <summary>
    /// Serves until SIGTERM or SIGINT, then stops gracefully and returns 0; when Kestrel
    /// cannot listen (the address is in use, or not an address of this host) prints one
    /// line naming the stack and the address on stderr and returns 1.
    /// </summary>
    public static int Serve(this WebApplication app, ServerSettings settings, string displayName)
    {
        try
        {
            app.Run();
            return 0;
        }
        catch (IOException e)
        {
            Console.Error.WriteLine($"error: {displayName} cannot listen on {settings.Host}:{settings.Port}: {e.Message}");
            return 1;
        }
    }

    /// <summary>
    /// Tuning: exact paths, then endpoint routing. Routing matches paths
    /// case-insensitively and ignores a trailing slash, so /workday/ and /WORKDAY would
    /// reach the /workday endpoint; the contract makes every path but exactly / and
    /// /workday a 404. The stack maps its endpoints after this.
    /// </summary>
    public static WebApplication UseContractPaths(this WebApplication app)
    {
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
        return app;
    }
}
