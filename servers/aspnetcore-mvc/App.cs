using Microsoft.AspNetCore.Mvc;
using Serverlab.Contract;
using Serverlab.Hosting;

namespace Serverlab.AspNetCoreMvc;

/// <summary>
/// The web layer: MVC controllers (<see cref="ContractController"/>, [ApiController]
/// with attribute routes) on Kestrel over the shared contract library, on the host
/// every ASP.NET Core stack shares (Serverlab.Hosting). Every setting that is not
/// ASP.NET Core's default is a [[tuning]] entry in server.toml and a row of
/// README.md's tuning table, with the same reason.
/// </summary>
public static class App
{
    /// <summary>Builds the server for <paramref name="settings"/>; <c>Run</c> or <c>StartAsync</c> serves.</summary>
    public static WebApplication Build(ServerSettings settings, string[] args)
    {
        // ASP.NET Core's stock builder with the tuning every ASP.NET Core stack shares
        // (../_shared/csharp/Serverlab.Hosting/ContractHost.cs). MVC finds its
        // controllers in this stack's assembly.
        WebApplicationBuilder builder = ContractHost.CreateBuilder(settings, args, typeof(App).Assembly);

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

        // Exactly / and /workday, then routing (ContractHost.UseContractPaths).
        app.UseContractPaths();

        // The attribute routes of ContractController: GET and HEAD on both paths. Any
        // other method on these paths matches no action, and routing answers 405 with
        // "Allow: GET, HEAD"; any other path is a 404.
        app.MapControllers();

        return app;
    }
}
