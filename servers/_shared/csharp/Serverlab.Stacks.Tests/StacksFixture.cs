using System.Net;
using System.Security.Cryptography.X509Certificates;
using Microsoft.AspNetCore.Builder;
using Serverlab.Contract;
using Serverlab.Contract.Tests;

namespace Serverlab.Stacks.Tests;

/// <summary>
/// Every C# stack, built by its own <c>App.Build</c> exactly as its Program.cs does
/// and started in-process on a free loopback port: real Kestrel, real routing, the
/// display name of its server.toml. One worker each, so the tests run the smallest
/// configuration the harness can ask for.
/// </summary>
public sealed class StacksFixture : IAsyncLifetime
{
    /// <summary>The stack folders and how each builds its server; a new C# stack adds itself here.</summary>
    public static readonly IReadOnlyDictionary<string, Func<ServerSettings, string[], WebApplication>> Builders =
        new Dictionary<string, Func<ServerSettings, string[], WebApplication>>
        {
            ["aspnetcore"] = Serverlab.AspNetCore.App.Build,
            ["aspnetcore-mvc"] = Serverlab.AspNetCoreMvc.App.Build,
        };

    private readonly Dictionary<string, WebApplication> _apps = [];
    private readonly Dictionary<string, int> _ports = [];

    /// <summary>The port <paramref name="stack"/> listens on.</summary>
    public int Port(string stack) => _ports[stack];

    /// <summary>The display name of <paramref name="stack"/>, from its server.toml.</summary>
    public static string DisplayName(string stack) =>
        TomlTopLevel.String(Path.Combine(Repository.ServersDir, stack, "server.toml"), "display_name");

    /// <summary>
    /// How a stack is started in-process: loopback, any free port, one worker, the
    /// repository's calendar; HTTPS with <paramref name="tlsCertificate"/> when given.
    /// </summary>
    public static ServerSettings InProcessSettings(string stack, X509Certificate2? tlsCertificate = null) =>
        new(
            Host: "127.0.0.1",
            ListenAddress: IPAddress.Loopback,
            Port: 0, // any free port
            Workers: 1,
            CalendarPath: Repository.CalendarFile,
            Routes: new Routes(DisplayName(stack), Repository.Calendar),
            TlsCertificate: tlsCertificate);

    public async Task InitializeAsync()
    {
        foreach ((string stack, Func<ServerSettings, string[], WebApplication> build) in Builders)
        {
            WebApplication app = build(InProcessSettings(stack), []);
            await app.StartAsync();
            _apps[stack] = app;
            _ports[stack] = new Uri(app.Urls.Single()).Port;
        }
    }

    public async Task DisposeAsync()
    {
        foreach (WebApplication app in _apps.Values)
        {
            await app.StopAsync();
            await app.DisposeAsync();
        }
    }
}
